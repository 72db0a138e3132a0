"""CNI plugins and their sandbox-network errors as data: who the agent is, what the error means, what to do."""
from __future__ import annotations

# A FailedCreatePodSandBox message is a network-setup failure when it carries one of these wrappers:
# containerd "failed to setup network for sandbox", dockershim "networkPlugin cni failed to set up pod ...
# network" / "failed to set up sandbox container ... network for pod", CRI-O "error adding pod ... to CNI network"
# and "failed to create pod network sandbox", libcni "plugin type=... failed (add)", Multus and the thick Multus
# shim (projectcalico/calico#9215, aws/amazon-vpc-cni-k8s#1709, flannel-io/flannel#2253, cilium/cilium#40312,
# k8snetworkplumbingwg/multus-cni#456 and #1072). Teardown-only errors ("(delete)", "failed to destroy network")
# are not setup failures.
NETWORK_SETUP = (r"failed to (?:setup|set up) network for sandbox|[Nn]etwork[Pp]lugin cni failed to set up pod|"
                 r"failed to set up sandbox container \"[^\"]*\" network for pod|failed to create pod network sandbox|"
                 r"error adding pod \S+ to CNI network|plugin type=\"[^\"]+\"(?: name=\"[^\"]+\")? failed \(add\)|"
                 r"Multus: \[|CNI request failed")
# The kubelet's NetworkNotReady event on a pod: "network is not ready: container runtime network not ready:
# NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized".
NETWORK_NOT_READY = r"network is not ready: container runtime network not ready"
# The part of the message that says what went wrong, after the wrappers: the first pattern that matches.
DETAILS = (
    r"(cannot find (?:get )?a network-attachment-definition .+)$",
    r"error adding container to network \"[^\"]+\": (.+)$",
    r"ERRORED: (.+)$",
    r"Multus: \[[^\]]*\]: (.+)$",
    r"failed \(add\): (.+)$",
    r"set up pod \"[^\"]*\" network: (.+)$",
    r"network for pod \"[^\"]*\": (.+)$",
)

# (key, regex over the message, the agent, a label selector for its pods)
PLUGINS = (
    # sriov-cni's own wording (k8snetworkplumbingwg/sriov-network-device-plugin#258, #310; rook/rook#9653)
    ("sriov", r"SRIOV-CNI|^sriov$", "sriov-cni and the SR-IOV network device plugin", "app=sriovdp"),
    ("multus", r"[Mm]ultus|network-attachment-definition", "the Multus daemon (kube-multus-ds)", "app=multus"),
    ("calico", r"type=\"calico\"|ClusterInformation|/var/lib/calico|calico", "calico-node", "k8s-app=calico-node"),
    ("cilium", r"cilium", "the cilium agent", "k8s-app=cilium"),
    ("aws-vpc-cni", r"aws-cni|aws-node|ipamd|failed to assign an IP address|127\.0\.0\.1:50051",
     "aws-node (VPC CNI ipamd)", "k8s-app=aws-node"),
    ("flannel", r"flannel", "kube-flannel", "app=flannel"),
    ("weave", r"weave|127\.0\.0\.1:6784", "weave-net", "name=weave-net"),
    ("azure", r"azure-vnet|azure-cns|AzureCNI", "azure-cns", "k8s-app=azure-cns"),
    ("antrea", r"antrea", "antrea-agent", "component=antrea-agent"),
    ("ovn-kubernetes", r"ovn", "ovnkube-node", "app=ovnkube-node"),
)

# (cause, regex, remedy) - most specific first.
CAUSES = (
    # The pool the node allocates pod IPs from is empty; the fix is IP_POOL (what holds addresses, how to grow it).
    # Cilium `[POST /ipam][502] postIpamFailure  range is full` (cilium/cilium#9793, #10627, #18331); flannel and
    # the bridge plugin's host-local IPAM `failed to allocate for range 0: no IP addresses available in range set`
    # (flannel-io/flannel#1416, #2264); Calico `failed to request 1 IPv4 addresses. IPAM allocated only 0` and
    # `cannot allocate new block due to per host block limit` (projectcalico/calico#4861), older calico-ipam `No IPv4
    # addresses available in pool` (projectcalico/cni-plugin#25); AWS VPC CNI `add cmd: failed to assign an IP
    # address to container` (aws/amazon-vpc-cni-k8s#1791, #3351; ipamd.log says InsufficientCidrBlocks for a full
    # subnet); Azure CNI `Failed to allocate address: No available addresses` / `No available address pools`
    # (Azure/acs-engine#2845, Azure/aks-engine#4263) and CNS `AllocateIPConfig failed: not enough IPs available`
    # (Azure/azure-container-networking#2999).
    ("ip-exhausted",
     r"failed to assign an IP address|no IP addresses available|failed to allocate for range|range is full|"
     r"IPAM allocated only 0|per host block limit|No IPv4 addresses available in pool|No available address(?:es| pools)|"
     r"not enough IPs available|"
     r"IPAM.*(?:exhausted|no more free|failed to allocate)|InsufficientCidrBlocks|ipam.*no (?:available|free)",
     None),
    ("attachment-missing",
     r"cannot find (?:get )?a network-attachment-definition|network-attachment-definitions\.k8s\.cni\.cncf\.io \"[^\"]+\" not found",
     "Create the NetworkAttachmentDefinition the pod's k8s.v1.cni.cncf.io/networks annotation names, in that "
     "namespace, or fix the annotation."),
    # sriov-cni got no VF because the pod requested none of the NAD's resourceName (danm-cni/danm#251).
    ("device-not-requested",
     r"VF pci addr is required",
     "The pod attaches an SR-IOV network but was given no VF: request the NetworkAttachmentDefinition's "
     "k8s.v1.cni.cncf.io/resourceName in resources.limits (one per attachment), or deploy the "
     "network-resources-injector that adds it."),
    ("unauthorized",
     r"[Uu]nauthorized|connection is unauthorized|[Ff]orbidden",
     "The CNI plugin's credentials for the API server were rejected (an expired or rotated service-account "
     "token in its CNI kubeconfig): restart the CNI agent pod on that node so it writes a fresh token."),
    # The plugin cannot reach the API server's service address (kube-proxy or the node's route to the service
    # network, not the agent): "dial tcp 10.96.0.1:443: i/o timeout" (projectcalico/calico#2720, microsoft/pai#4572).
    ("apiserver-unreachable",
     r"dial tcp \[?[0-9a-f.:]+\]?:(?:443|6443): (?:i/o timeout|connect: connection refused|connect: no route to host)",
     "The CNI plugin on the node cannot reach the API server's service address: check kube-proxy (or the eBPF "
     "service replacement) on that node and the node's route to the service network, then let the kubelet retry."),
    # Wording that points at the node's agent or its files; whether the agent is down is read from its pod
    # (AGENT_FIXES), never from the message alone: the agent can be Ready while its files are missing.
    ("agent-down",
     r"connection refused|no such file or directory|Is the agent running|dial unix|subnet\.env|"
     r"cni plugin not initialized|cni config uninitialized|No networks found|failed to find plugin|"
     r"context deadline exceeded|i/o timeout",
     None),
)

# The agent's own pods, by their DaemonSet, app label or generateName (gpu/stack.identity): per PLUGINS key.
AGENT_PODS = {
    "sriov": r"^(?:kube-)?sriov-(?:device-plugin|network-config-daemon|cni)",
    "multus": r"^(?:kube-)?multus(?:-ds)?(?:-amd64)?$",
    "calico": r"^calico-node$",
    "cilium": r"^cilium$",
    "aws-vpc-cni": r"^aws-node$",
    "flannel": r"^(?:kube-)?flannel(?:-ds)?(?:-amd64|-arm64)?$",
    "weave": r"^weave-net$",
    "azure": r"^azure-cns$",
    "antrea": r"^antrea-agent$",
    "ovn-kubernetes": r"^ovnkube-node$",
}

# An "agent-down" message, by what the agent's pod on the node shows ($agentpod, $agentstate, $agent, $node).
AGENT_FIXES = {
    "down": "The CNI agent pod $agentpod on node $node is $agentstate: the plugin needs it (its socket, config or "
            "binaries). Read that pod's log (--previous after a restart) and fix what it names; the kubelet retries "
            "the sandbox by itself.",
    "healthy": "The CNI agent pod $agentpod on node $node is Running and Ready, yet the plugin cannot use what it "
               "needs: check the CNI files on the node (config in /etc/cni/net.d, binaries in /opt/cni/bin, the "
               "agent's state files named in the error), restart the agent pod so it writes them again, and read "
               "its log.",
    "absent": "No pod of $agent is among the pods read on node $node: check that its DaemonSet places a pod there "
              "(nodeSelector, tolerations) and read that pod's log; the kubelet retries the sandbox by itself.",
    "unknown": "The error points at the CNI agent on node $node ($agent), whose pod could not be read ($gap): "
               "check that pod and its log, then let the kubelet retry.",
}
# A Ready agent whose pod mounts no host directory holding the file the plugin misses ($path, $mounts): an agent
# manifest older than the CNI plugin (calico/node v2 with the v3 CNI: projectcalico/calico#1795).
AGENT_UNMOUNTED = ("The CNI agent pod $agentpod on node $node is Running and Ready, but it mounts no host directory "
                   "holding $path (its hostPath volumes: $mounts), so it never writes the file the plugin reads: "
                   "bring the agent's DaemonSet to the manifest of the CNI plugin's version (it mounts that "
                   "directory), then let the kubelet retry.")
# The summary's word for each: "agent down" only when the agent's pod says so.
AGENT_SUMMARY = {"down": "agent down", "healthy": "plugin error, agent pod Ready",
                 "absent": "plugin error, no agent pod seen on the node", "unknown": "plugin error, agent not checked"}

# IP pool exhaustion ($node, $pool: the node's podCIDR and pod count as read; $free and $grow: IP_POOL_ADVICE).
IP_POOL = ("No free pod IPs are left in the pool node $node allocates from$pool. The plugin's IPAM answered, so "
           "restarting the CNI agent frees nothing. Free addresses: $free. Or give the pool more: $grow. The kubelet "
           "retries the sandbox by itself once an address is free.")
# Per PLUGINS key (default: host-local IPAM, as flannel and the bridge plugin use it): (what holds addresses, how to
# get more). host-local keeps one file per reserved address under /var/lib/cni/networks/<network>/, and a
# container that is gone without a CNI DEL keeps its address (flannel-io/flannel#1416).
_TERMINATING = "pods stuck Terminating on the node keep theirs until their sandbox is torn down"
IP_POOL_ADVICE = {
    "cilium": (_TERMINATING + ", and endpoints of deleted pods can linger (`cilium-dbg endpoint list` in the agent "
               "pod on the node)",
               "a larger per-node pod CIDR (cluster-pool IPAM: ipam.operator.clusterPoolIPv4MaskSize, or another "
               "range in clusterPoolIPv4PodCIDRList; Kubernetes IPAM: the node's spec.podCIDR from the controller "
               "manager's --node-cidr-mask-size), or fewer pods per node (the kubelet's maxPods)"),
    "calico": (_TERMINATING + ", and allocations of deleted pods can leak (`calicoctl ipam check`, then "
               "`calicoctl ipam release` for the leaked ones)",
               "another or a larger IPPool, and for `per host block limit` a higher maxBlocksPerHost in the IPAMConfig "
               "or a larger blockSize (`calicoctl ipam show --show-blocks` shows the blocks' use)"),
    "aws-vpc-cni": (_TERMINATING,
                    "the subnet or the instance's ENI addresses are used up (ipamd.log on the node says "
                    "InsufficientCidrBlocks for a full subnet): add subnet space (a larger subnet, or custom "
                    "networking with ENIConfig subnets in a secondary CIDR), enable prefix delegation "
                    "(ENABLE_PREFIX_DELEGATION=true on the aws-node DaemonSet; it needs free /28 blocks), or use an "
                    "instance type with more ENI addresses; a lower WARM_IP_TARGET keeps fewer addresses idle on "
                    "other nodes"),
    "azure": (_TERMINATING,
              "a larger node subnet (or a separate pod subnet with dynamic IP allocation), or a lower max pods per "
              "node; `not enough IPs available, waiting on Azure CNS` clears once CNS gets more addresses from the "
              "subnet (the node's NodeNetworkConfig in kube-system)"),
    "default": (_TERMINATING + "; host-local IPAM keeps one file per reserved address under "
                "/var/lib/cni/networks/<network>/ on the node, and an address whose container is gone stays reserved: "
                "remove the files whose container ID `crictl pods` no longer lists",
                "a larger per-node pod CIDR (the node's spec.podCIDR, from the controller manager's "
                "--node-cidr-mask-size), or fewer pods per node (the kubelet's maxPods)"),
}
