"""Sub-explanations agree with the evidence (issue 19, point 4), over every rule case and every realworld case:

- no "no GPU node" claim while the evidence lists a node with GPU capacity or allocatable (and no "no node advertises
  R" while a node's allocatable holds R), no "no node carries GPU labels" while a node is labelled as a GPU node;
- no "no node has enough free GPUs" while a node has the pod's request free (it may fail another predicate: the
  report says "no node the pod may use" then);
- a node-selector mismatch shows, per nodeSelector key, the values the GPU nodes carry, and its fix fills one in;
- no "KIND NAME does not exist" while the evidence holds that object;
- no "CNI agent down / not running" claim unless a CNI agent pod on the pod's node is in the evidence and not Ready;
- a pod is not described as both Running and CrashLoopBackOff, and never as Running while kubectl's STATUS column
  says CrashLoopBackOff.

The report's own prose is judged (summaries, messages, fixes, snippets); quoted cluster text (events, logs) says
what the cluster said and is not a claim of the tool. CNI agents are recognised here from their well-known
DaemonSet and pod names, independently of the tool's data/cni.py."""
import os
import re

import pytest

from kubectl_gpudoctor.data import gpu_resources as gr
from kubectl_gpudoctor.gpu import nodeview
from kubectl_gpudoctor.kube import podstate
from kubectl_gpudoctor.offline import load as offline
from tests.casebook import all_cases, diagnose, target_kind
from tests.conftest import ROOT

REALWORLD = os.path.join(ROOT, "tests", "realworld")


def _case_paths():
    out = [pytest.param(p, id=f"cases/{rid}/{os.path.basename(p)}") for rid, _, p in all_cases()]
    for kind in ("failing", "healthy"):
        root = os.path.join(REALWORLD, kind)
        out += [pytest.param(os.path.join(root, d), id=f"realworld/{kind}/{d}") for d in sorted(os.listdir(root))
                if os.path.isfile(os.path.join(root, d, "bundle.yaml"))]
    return out


# --- what the evidence holds -------------------------------------------------------------------------------

def _gpu_resources_of(node, field):
    held = (node.get("status") or {}).get(field) or {}
    return {r: v for r, v in held.items() if gr.lookup(r) and gr.lookup(r).counts and _count(v) > 0}


def _count(value):
    try:
        return int(str(value))
    except ValueError:
        return 0


def gpu_nodes(nodes):
    """Nodes with a GPU-counting resource above 0 in capacity or allocatable."""
    return [n for n in nodes if _gpu_resources_of(n, "capacity") or _gpu_resources_of(n, "allocatable")]


def advertising(nodes, res):
    return [n for n in nodes if _count(((n.get("status") or {}).get("allocatable") or {}).get(res, 0)) > 0]


# The CNI agents' DaemonSets / pods (Calico, Cilium, AWS VPC CNI, flannel, Weave, Antrea, OVN-Kubernetes, Multus,
# Azure CNS, SR-IOV device plugin): the tests' own list.
_AGENT = re.compile(r"^(calico-node|cilium|aws-node|kube-flannel|flannel|weave-net|antrea-agent|ovnkube-node|"
                    r"kube-multus|multus|azure-cns|kube-sriov-device-plugin|sriov-device-plugin)")


def _is_agent(pod):
    meta = pod.get("metadata") or {}
    owners = [o.get("name") or "" for o in meta.get("ownerReferences") or [] if o.get("kind") == "DaemonSet"]
    return any(_AGENT.match(s) and "operator" not in s for s in owners + [meta.get("generateName") or "",
                                                                         meta.get("name") or ""])


def _ready(pod):
    conds = {c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or []}
    return (pod.get("status") or {}).get("phase") == "Running" and conds.get("Ready") == "True"


def _requests(pod):
    """GPU-counting resources a pod requests (requests, else limits, as the scheduler counts them)."""
    out = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        for r, v in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            if gr.lookup(r) and gr.lookup(r).counts:
                out[r] = out.get(r, 0) + _count(v)
    return out


def free_gpus(ev, node, res):
    """Allocatable minus what the node's unfinished pods request (None when the node's pods are not listed)."""
    if not ev.readable("pods"):
        return None
    name = node["metadata"]["name"]
    used = sum(_requests(p).get(res, 0) for p in ev.pods_on(name)
               if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))
    return _count(((node.get("status") or {}).get("allocatable") or {}).get(res, 0)) - used


def agents_down(ev, node_name):
    return [p for p in ev.pods_on(node_name) if _is_agent(p) and not _ready(p)]


# --- what the report claims --------------------------------------------------------------------------------

def _diagnoses(diag):
    yield diag
    for m in diag.members:
        yield from _diagnoses(m)


def prose(diag, evidence=False):
    """The tool's own words: summaries, finding messages, fixes, snippets (and its evidence lines when asked)."""
    out = []
    for d in _diagnoses(diag):
        out.append(d.summary or "")
        for f in d.findings:
            out += [f.summary or "", f.message or "", f.remediation or "", f.snippet or ""]
            if evidence:
                out += [e.text or "" for e in f.evidence if e.source not in ("event", "log")]
    return "\n".join(out)


NO_GPU_NODE = re.compile(r"cluster has no GPU node|no GPU nodes? (?:right now|exists?|in the cluster)|"
                         r"there (?:is|are) no GPU nodes?|no node (?:has|with) (?:a |any )?GPUs?\b", re.I)
NO_FREE = re.compile(r"\bno node has enough free GPUs", re.I)
NO_GPU_LABELS = re.compile(r"no node carries GPU labels", re.I)
NO_NODE_ADVERTISES = re.compile(r"no node advertises (?:the MIG profile )?([a-z0-9.-]+/[A-Za-z0-9._-]+)", re.I)
AGENT_DOWN = re.compile(r"agent[^.;:]{0,60}?\b(?:is |are )?(?:down|not running|not ready|crash\w*)\b|"
                        r"\bagent down\b", re.I)
DOES_NOT_EXIST = re.compile(r"(?<!of )\b(ConfigMap|Secret|StorageClass|RuntimeClass|PersistentVolumeClaim|ResourceClaim|"
                            r"ResourceClaimTemplate|DeviceClass|NetworkAttachmentDefinition|PriorityClass) "
                            r"([a-z0-9][a-z0-9./-]*?)(?: \([^)]*\))?,? (?:which )?does not exist")
CLUSTER_SCOPED = ("StorageClass", "RuntimeClass", "DeviceClass", "PriorityClass")
STATE_WORDS = ("Running", "CrashLoopBackOff", "Init:CrashLoopBackOff")


def state_claims(text, pod_name):
    """The states the text gives the pod: `NAME is STATE`, `NAME (STATE`, `NAME on node N is STATE`."""
    rx = re.compile(rf"(?<![\w.-]){re.escape(pod_name)}(?![\w.-])(?: on (?:node )?\S+| there)?"
                    rf"(?: is| runs| was|:| \()\s*(?:still |now |in )?([A-Za-z:]+)")
    return {m.group(1) for m in rx.finditer(text) if m.group(1) in STATE_WORDS}


def _evidence(path):
    kind = target_kind(path)
    if kind in ("Pod", "Node"):
        return offline.load(path, kind)
    from kubectl_gpudoctor.offline.podsets import collect_workload
    return collect_workload(path, None, kind.lower(), None, 80)[0]


def contradictions(path):
    """Each contradiction the report of one case holds, as a sentence (empty: the report agrees with its evidence)."""
    diag = diagnose(path)
    ev = _evidence(path)
    nodes = ev.all("Node")
    text = prose(diag)
    found = []
    gpus = gpu_nodes(nodes)
    for m in NO_GPU_NODE.finditer(text):
        if gpus:
            found.append(f"says {m.group(0)!r} while node(s) {[n['metadata']['name'] for n in gpus]} have GPUs")
    if NO_FREE.search(text) and ev.pod is not None and not (ev.pod.get("spec") or {}).get("nodeName"):
        for res, need in _requests(ev.pod).items():
            roomy = [n["metadata"]["name"] for n in nodes if (free_gpus(ev, n, res) or 0) >= need > 0]
            if roomy:
                found.append(f"says no node has enough free GPUs while {roomy} have {need} {res} free")
    labelled = [n for n in nodes if nodeview.labelled_vendors(n)]
    if NO_GPU_LABELS.search(text) and labelled:
        found.append(f"says no node carries GPU labels while {[n['metadata']['name'] for n in labelled]} do")
    for m in NO_NODE_ADVERTISES.finditer(text):
        having = advertising(nodes, m.group(1).rstrip(".:,"))
        if having:
            found.append(f"says {m.group(0)!r} while {[n['metadata']['name'] for n in having]} advertise it")
    for m in DOES_NOT_EXIST.finditer(text):   # "key K of ConfigMap C does not exist" is about the key
        kind, ref = m.group(1), m.group(2)
        ns, name = ref.split("/", 1) if "/" in ref else ((diag.target or {}).get("namespace"), ref)
        if kind in CLUSTER_SCOPED:
            ns = None
        if any(o["metadata"].get("name") == name and o["metadata"].get("namespace") == ns for o in ev.all(kind)):
            found.append(f"says {m.group(0)!r} while the evidence holds {kind} {name}")
    for d in _diagnoses(diag):
        own = "\n".join([d.summary or ""] + [x for f in d.findings if f.phase in ("network", "creation")
                                              for x in (f.summary, f.message, f.remediation)])
        node = (d.target or {}).get("node")
        for m in AGENT_DOWN.finditer(own):
            if not (node and agents_down(ev, node)):
                found.append(f"says {m.group(0)!r} but no CNI agent pod on {node} is read and not Ready")
    found += _selector_shows_values(diag, ev, gpus)
    words = prose(diag, evidence=True)
    for pod in ev.all("Pod"):
        name = pod["metadata"]["name"]
        claims = state_claims(words, name) | {d.phase for d in _diagnoses(diag) if d.target.get("kind") == "Pod"
                                              and d.target.get("name") == name}
        shown = podstate.display_status(pod)
        if "Running" in claims and any("CrashLoopBackOff" in c for c in claims):
            found.append(f"pod {name} is described as both Running and CrashLoopBackOff")
        elif "Running" in claims and "CrashLoopBackOff" in shown:
            found.append(f"pod {name} is described as Running while kubectl shows {shown}")
    return found


def _selector_shows_values(diag, ev, gpus):
    """A node-selector-mismatch that read the nodes names, per nodeSelector key the GPU nodes fail, a value they
    carry for it (the label that would match), and its fix fills it in."""
    out = []
    for f in (f for f in diag.findings if f.id == "node-selector-mismatch"):
        if not ev.readable("nodes") or ev.pod is None:
            continue
        for key, want in ((ev.pod.get("spec") or {}).get("nodeSelector") or {}).items():
            have = {((n.get("metadata") or {}).get("labels") or {}).get(key) for n in gpus} - {None, want}
            if have and not any(v in f.message for v in have):
                out.append(f"node-selector-mismatch does not show the values {sorted(have)} the GPU nodes carry for {key}")
            if have and not any(f'"{v}"' in (f.remediation or "") for v in have):
                out.append(f"node-selector-mismatch's fix does not fill in a value of {key} the GPU nodes carry")
    return out


@pytest.mark.parametrize("path", _case_paths())
def test_report_agrees_with_its_evidence(path):
    assert contradictions(path) == []


# --- the checker itself can fail ---------------------------------------------------------------------------

def test_state_claims_read_the_tools_wording():
    text = ("Device plugin pod kube-system/nvdp-abc is Running there but serves no GPU. "
            "Device plugin pod kube-system/nvdp-abc on node gpu-1 is not ready (CrashLoopBackOff, ready 0/1).")
    assert state_claims(text, "nvdp-abc") == {"Running"}
    assert state_claims("pod nvdp-abc is CrashLoopBackOff, not Ready", "nvdp-abc") == {"CrashLoopBackOff"}
    assert state_claims("pod nvdp-abcd is Running", "nvdp-abc") == set()


def test_phrases_that_count_as_claims():
    assert NO_GPU_NODE.search("No node carries GPU labels either: the cluster has no GPU node right now")
    assert not NO_GPU_NODE.search("No GPU node can ever fit the pod")
    assert AGENT_DOWN.search("The CNI agent on the node is not running or not ready")
    assert AGENT_DOWN.search("CNI (calico) cannot set up the pod network on n1: agent down")
    assert not AGENT_DOWN.search("calico-node pod calico-node-x on n1 is Running and Ready: the agent looks healthy")
    assert NO_NODE_ADVERTISES.search("No node advertises nvidia.com/gpu: it is absent").group(1) == "nvidia.com/gpu"
    m = DOES_NOT_EXIST.search("The pod asks for RuntimeClass nvidia-cdi, which does not exist (existing: nvidia)")
    assert m.groups() == ("RuntimeClass", "nvidia-cdi")
    assert DOES_NOT_EXIST.search("Secret hf-token (used by env HF_TOKEN) does not exist").group(2) == "hf-token"


# --- the CNI agent's state decides "agent down", on both sides (the calico nodename case, varied) --------------

CALICO = os.path.join(REALWORLD, "failing", "r4-agree-calico-nodename-old-calico-node-ready")


def _cni(ev):
    from kubectl_gpudoctor import verdict
    diag = verdict.diagnose_pod(ev)
    return diag, next(f for f in diag.findings if f.id == "cni-failure")


def _agent(ev):
    return next(p for p in ev.all("Pod") if p["metadata"]["name"] == "calico-node-w8r5n")


def test_a_ready_agent_without_the_host_mount_is_not_down():
    diag, f = _cni(offline.load(CALICO))
    assert "agent down" not in diag.summary and "agent pod Ready" in diag.summary
    assert "mounts no host directory holding /var/lib/calico/nodename" in f.remediation


def test_a_ready_agent_with_the_host_mount_points_at_its_files():
    ev = offline.load(CALICO)
    _agent(ev)["spec"]["volumes"].append({"hostPath": {"path": "/var/lib/calico", "type": ""}, "name": "var-lib-calico"})
    diag, f = _cni(ev)
    assert "agent pod Ready" in diag.summary and "mounts no host directory" not in f.remediation
    assert "/etc/cni/net.d" in f.remediation and "not running" not in f.remediation


def test_a_crash_looping_agent_is_down():
    ev = offline.load(CALICO)
    cs = _agent(ev)["status"]["containerStatuses"][0]
    cs.update(ready=False, restartCount=6, state={"waiting": {"reason": "CrashLoopBackOff", "message":
              "back-off 2m40s restarting failed container=calico-node pod=calico-node-w8r5n_kube-system"}})
    for c in _agent(ev)["status"]["conditions"]:
        if c["type"] in ("Ready", "ContainersReady"):
            c["status"] = "False"
    diag, f = _cni(ev)
    assert diag.summary.endswith("agent down")
    assert "calico-node-w8r5n on node gpu-p100-02 is CrashLoopBackOff, ready 1/2" in f.remediation


def test_unreadable_pods_leave_the_agent_unchecked():
    from kubectl_gpudoctor.evidence import Gap
    ev = offline.load(CALICO)
    ev.objects["Pod"] = [p for p in ev.all("Pod") if p is not _agent(ev)]
    ev.add_gap(Gap("pods", "forbidden", "", "list"))
    diag, f = _cni(ev)
    assert diag.summary.endswith("agent not checked")
    assert "could not be read (forbidden, needs list pods)" in f.remediation
