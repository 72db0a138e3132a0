"""Real wording families for the eviction and network rules, beyond the case fixtures: each variant classifies."""
import pytest

from kubectl_gpudoctor.evidence import Evidence, Target
from kubectl_gpudoctor.rules import RULES, Hit

NODE = "gpu-node-01"


def evidence(pod_status, events=(), spec_extra=None, objects=()):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "ml", "uid": "u-1", "labels": {"app": "p"}},
           "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "img"}], **(spec_extra or {})},
           "status": pod_status}
    ev = Evidence(target=Target("Pod", "p", "ml"))
    ev.add(pod)
    for e in events:
        ev.add(dict({"kind": "Event", "apiVersion": "v1", "metadata": {"name": f"p.{len(ev.all('Event'))}", "namespace": "ml"},
                     "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ml", "uid": "u-1"},
                     "lastTimestamp": "2026-11-30T09:00:00Z", "type": "Warning"}, **e))
    for o in objects:
        ev.add(o)
    ev.sources = {"pods", "events", "nodes", "networkpolicies", "network-attachment-definitions"}
    return ev


def run(rule_id, ev):
    return RULES[rule_id].check(ev)


@pytest.mark.parametrize("reason,message,fix_word", [
    ("Evicted", "The node was low on resource: memory. ", "requests.memory"),
    ("Evicted", "The node was low on resource: [MemoryPressure].", "requests.memory"),
    ("Evicted", "Pod The node was low on resource: [DiskPressure].", "crictl rmi --prune"),
    ("Evicted", "The node was low on resource: ephemeral-storage. Threshold quantity: 2146223340, available: 1883424Ki. "
                "Container helmer was using 10304Ki, request is 10Mi, has larger consumption of ephemeral-storage. ",
     "crictl rmi --prune"),
    ("Evicted", "The node was low on resource: pids. ", "process ids"),
    ("Evicted", "The node was low on resource: inodes. ", "inodes"),
    ("Evicted", "Pod The node had condition: [DiskPressure]. ", "refused the pod"),
    ("Evicted", 'Usage of EmptyDir volume "dshm" exceeds the limit "8Gi". ', "sizeLimit"),
    ("Evicted", "Pod ephemeral local storage usage exceeds the total limit of containers 10Gi. ", "ephemeral-storage limits"),
    ("Evicted", 'Container trainer exceeded its local ephemeral storage limit "20Gi". ', "limits.ephemeral-storage"),
    ("Terminated", "Pod was terminated in response to imminent node shutdown.", "shut down"),
    ("Shutdown", "Node is shutting, evicting pods", "shut down"),
    ("Preempting", "Preempted in order to admit critical pod", "system-critical"),
])
def test_eviction_wording(reason, message, fix_word):
    hit = run("evicted", evidence({"phase": "Failed", "reason": reason, "message": message}))
    assert isinstance(hit, Hit) and fix_word in hit.fix, (hit.fix if hit else None)


def test_disruption_condition_alone_is_an_eviction():
    msg = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 61248Ki. "
    hit = run("evicted", evidence({"phase": "Failed", "conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": msg}]}))
    assert isinstance(hit, Hit) and "threshold 100Mi" in hit.message


@pytest.mark.parametrize("status", [
    {"phase": "Failed", "reason": "DeadlineExceeded", "message": "Pod was active on the node longer than the specified deadline"},
    {"phase": "Succeeded"},
    {"phase": "Failed", "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}]},
])
def test_not_an_eviction(status):
    assert run("evicted", evidence(status)) is None


SANDBOX = "Failed to create pod sandbox: rpc error: code = Unknown desc = "


# No agent pod is among the pods read: the fix says so, never "not running" (no pod shows that; issue 19.4).
@pytest.mark.parametrize("message,plugin,fix_word", [
    (SANDBOX + 'failed to setup network for sandbox "ab12": plugin type="calico" failed (add): stat /var/lib/calico/nodename: '
               "no such file or directory: check that the calico/node container is running and has mounted /var/lib/calico/",
     "calico", "among the pods read"),
    (SANDBOX + '[failed to set up sandbox container "ab12" network for pod "p": networkPlugin cni failed to set up pod '
               '"p_ml" network: add cmd: Error received from AddNetwork gRPC call: rpc error: code = Unavailable desc = '
               'connection error: desc = "transport: Error while dialing dial tcp 127.0.0.1:50051: connect: connection '
               'refused", failed to clean up sandbox container "ab12" network for pod "p": networkPlugin cni failed to '
               'teardown pod "p_ml" network: del cmd: error received from DelNetwork gRPC call]',
     "aws-vpc-cni", "among the pods read"),
    (SANDBOX + 'failed to setup network for sandbox "ab12": plugin type="bridge" name="k8s-pod-network" failed (add): '
               "failed to allocate for range 0: no IP addresses available in range set: 10.85.0.1-10.85.255.254",
     "bridge", "free pod IPs"),
    (SANDBOX + 'failed to set up sandbox container "ab12" network for pod "p": networkPlugin cni failed to set up pod '
               '"p_ml" network: unable to allocate IP address: Post "http://127.0.0.1:6784/ip/ab12": dial tcp '
               "127.0.0.1:6784: connect: connection refused", "weave", "among the pods read"),
    (SANDBOX + 'failed to setup network for sandbox "ab12": plugin type="multus" name="multus-cni-network" failed (add): '
               'Multus: [ml/p/u-1]: error adding container to network "k8s-pod-network": plugin type="calico" failed '
               "(add): error getting ClusterInformation: connection is unauthorized: Unauthorized", "calico", "token"),
])
def test_cni_wording(message, plugin, fix_word):
    ev = evidence({"phase": "Pending", "conditions": [{"type": "PodReadyToStartContainers", "status": "False"}]},
                  events=[{"reason": "FailedCreatePodSandBox", "message": message, "count": 3}])
    hit = run("cni-failure", ev)
    assert isinstance(hit, Hit) and f"The {plugin} CNI plugin" in hit.message and fix_word in (hit.fix or ""), hit


def test_network_not_ready_event_is_a_cni_failure():
    msg = ("network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
           "message:Network plugin returns error: cni plugin not initialized")
    ev = evidence({"phase": "Pending"}, events=[{"reason": "NetworkNotReady", "message": msg}])
    assert isinstance(run("cni-failure", ev), Hit)


def test_teardown_only_and_non_network_sandbox_errors_are_not_cni_failures():
    for msg in ('failed to destroy network for sandbox "ab12": plugin type="calico" failed (delete): error getting '
                "ClusterInformation: connection is unauthorized: Unauthorized",
                SANDBOX + 'failed to create containerd task: failed to create shim task: OCI runtime create failed: '
                          'runc create failed: unable to start container process: error during container init'):
        ev = evidence({"phase": "Pending"}, events=[{"reason": "FailedCreatePodSandBox", "message": msg}])
        assert run("cni-failure", ev) is None, msg


def test_running_without_pod_ip():
    ev = evidence({"phase": "Running", "conditions": [{"type": "PodReadyToStartContainers", "status": "True"}]})
    assert isinstance(run("cni-failure", ev), Hit)
    ev = evidence({"phase": "Running", "podIP": "10.1.2.3",
                   "conditions": [{"type": "PodReadyToStartContainers", "status": "True"}]})
    assert run("cni-failure", ev) is None


def test_old_sandbox_errors_on_a_running_pod_without_the_sandbox_condition():
    """Before 1.25 there is no PodReadyToStartContainers/PodHasNetwork: a pod IP and a started container say the
    sandbox recovered, and events up to an hour old must not make a healthy pod fail."""
    msg = SANDBOX + 'failed to setup network for sandbox "ab12": plugin type="calico" failed (add): connection is unauthorized'
    ev = evidence({"phase": "Running", "podIP": "10.1.2.3",
                   "containerStatuses": [{"name": "c", "started": True, "ready": True, "state": {"running": {}}}]},
                  events=[{"reason": "FailedCreatePodSandBox", "message": msg}])
    assert run("cni-failure", ev) is None
