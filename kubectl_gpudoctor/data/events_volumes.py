"""Event signatures of volumes the kubelet cannot attach or mount (MountVolume/AttachVolume, Multi-Attach,
unmounted-volume timeouts); data only, imported through event_signatures (never directly)."""
from typing import Tuple

from .signature import EventSignature

VOLUMES: Tuple[EventSignature, ...] = (
    # --- volume-mount-failed -------------------------------------------------------------------------------------
    # kubelet operation_generator.go: `MountVolume.SetUp failed for volume "x" : …`, `MountVolume.MountDevice failed
    # for volume "pvc-…" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name
    # efs.csi.aws.com not found in the list of registered CSI drivers`, `MountVolume.NewMounter initialization failed
    # for volume …`, `MapVolume.SetUpDevice failed for volume …` (kubernetes/kubernetes#29166, #110158).
    EventSignature("mount-op", "volume-mount-failed",
                   r'(?P<op>(?:MountVolume|MapVolume|UnmapVolume)\.\w+|AttachVolume\.Attach) failed for volume '
                   r'"(?P<volume>[^"]+)"(?: \(UniqueName: "[^"]*"\))?(?: : | )(?P<detail>[^\n]*)',
                   "the kubelet (or the attach/detach controller) could not prepare this volume"),
    # attachdetach-controller: `Multi-Attach error for volume "pvc-…" Volume is already exclusively attached to one
    # node and can't be attached to another` / `Volume is already used by pod(s) x` (openshift-docs#24970).
    EventSignature("multi-attach", "volume-mount-failed",
                   r'Multi-Attach error for volume "(?P<volume>[^"]+)"\s*(?P<detail>[^\n]*)',
                   "a ReadWriteOnce volume is still attached to another node (an old pod there still uses it, or the "
                   "detach did not finish)",
                   "Free the volume: delete or move the pod that still uses it on the other node (`kubectl get pods -A "
                   "-o wide` for the claim), or wait for the detach; use a ReadWriteMany class if several pods need it."),
    # kubelet volume_manager.go: `Unable to attach or mount volumes: unmounted volumes=[models], unattached
    # volumes=[models kube-api-access-x], failed to process volumes=[]: timed out waiting for the condition`
    # (1.2x; `context deadline exceeded` in newer kubelets; cert-manager#4694, ceph-csi#1109).
    EventSignature("unmounted", "volume-mount-failed",
                   r"Unable to attach or mount volumes: unmounted volumes=\[(?P<volumes>[^\]]*)\]",
                   "the kubelet gave up waiting for these volumes; the MountVolume/AttachVolume events say why"),
    # kubelet <= 1.18: `Unable to mount volumes for pod "x": timeout expired waiting for volumes to attach or mount
    # for pod "ns"/"x". list of unmounted volumes=[data]. list of unattached volumes=[…]`.
    EventSignature("unmounted-old", "volume-mount-failed",
                   r"list of unmounted volumes=\[(?P<volumes>[^\]]*)\]",
                   "the kubelet gave up waiting for these volumes"),
)
