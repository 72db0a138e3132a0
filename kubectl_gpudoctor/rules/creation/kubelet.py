"""Creation-phase rules about what the node's kubelet refused before any container: admission and volumes."""
from __future__ import annotations

import re

from ...data import event_signatures as sigs
from ...kube.objects import gpu_request, is_terminated, meta, name, spec, status
from .._common import creating, current, event_line, pod_events, scheduled
from ._common import ADMISSION, VOLUMES, Found, events_unknown
from ..registry import Hit, Line, rule


def _rejected(ev):
    """Phase Failed with a kubelet admission reason (not an eviction, not a device-allocation failure)."""
    st = status(ev.pod)
    return scheduled(ev) and st.get("phase") == "Failed" and bool(st.get("reason")) \
        and st.get("reason") not in sigs.NOT_ADMISSION


@rule("node-admission-rejected", phase="creation", severity="critical", rank=ADMISSION, applies=scheduled,
      title="The node's kubelet rejected the pod after scheduling",
      remediation="Delete the pod ($recreates); a rejected pod is never retried. "
                  "If it keeps happening, fix what the kubelet refused: $advice.",
      snippet="kubectl delete pod $pod -n $namespace\nkubectl get events -n $namespace --field-selector "
              "involvedObject.name=$pod,reason=$reason")
def node_admission_rejected(ev):
    """The pod is Failed with a kubelet admission reason such as OutOf<resource>, NodeAffinity or
    TopologyAffinityError (UnexpectedAdmissionError is device-allocation-failed)."""
    if not _rejected(ev):
        return None
    st = status(ev.pod)
    reason, message = st["reason"], (st.get("message") or "").strip()
    meaning = _admission_meaning(reason)
    said = re.match(sigs.REJECTED_MESSAGE, message)
    if meaning is None and not (said and message.startswith("Pod was rejected")):
        return None
    node = spec(ev.pod).get("nodeName")
    text = f"The kubelet on node {node} rejected the pod after the scheduler placed it there ({reason}"
    text += f": {said.group('message')})" if said else ")"
    text += f": {meaning or 'see the message'}."
    holders = _holders(ev, reason)
    if holders:
        text += f" Pods holding {reason[5:]} on {node}: {holders}."
    return Hit(text, [Line("status", "status.reason", f"{reason}: {message}")] + _events(ev, reason),
               values={"reason": reason,
                       "advice": _ADVICE.get("OutOf" if reason.startswith("OutOf") else reason, "see the message above")},
               summary=f"The kubelet on {node} rejected the pod ({reason})")


def _admission_meaning(reason):
    for pattern, meaning in sigs.ADMISSION_REASONS:
        m = re.match(pattern, reason)
        if m:
            return meaning.format(**m.groupdict())
    return None


_ADVICE = {
    "OutOf": "let pods that are still terminating release the resource before new ones land (shorter grace "
             "periods), and check that the node's device plugin advertises every device (capacity = allocatable)",
    "NodeAffinity": "keep the labels the pod selects on stable (do not select on labels GPU feature discovery or "
                    "MIG reconfiguration rewrite), or select on a label that is set before the node takes pods",
    "TopologyAffinityError": "request GPUs that fit one NUMA node, relax the kubelet's topology manager policy, or "
                             "keep smaller GPU pods off the nodes meant for full-socket pods",
    "TaintToleration": "tolerate the node's NoExecute taint or keep the pod off that node",
    "NodePorts": "drop the hostPort or spread the pods with anti-affinity",
}


def _holders(ev, reason):
    """For OutOf<GPU resource>: the pods on the node that hold it (terminating ones marked), when they were listed."""
    res = reason[5:] if reason.startswith("OutOf") else ""
    node = spec(ev.pod).get("nodeName")
    if not res or ev.pod_nodes is not None and node not in ev.pod_nodes:
        return ""
    held = [p for p in ev.pods_on(node) if name(p) != name(ev.pod) and not is_terminated(p) and gpu_request(p).get(res)]
    return ", ".join(f"{meta(p).get('namespace')}/{name(p)} ({gpu_request(p)[res]}"
                     + (", terminating)" if meta(p).get("deletionTimestamp") else ")") for p in held[:8])


def _events(ev, reason):
    return [event_line(e) for e in pod_events(ev, (reason,))[-1:]]


# --- volumes -------------------------------------------------------------------------------------------------------

@rule("volume-mount-failed", phase="creation", severity="critical", rank=VOLUMES, applies=scheduled,
      title="A volume cannot be attached or mounted",
      remediation="Fix what backs volume $volume ($backing): $advice.",
      snippet="kubectl describe pod $pod -n $namespace | sed -n '/^Events:/,$$p'\n$check")
def volume_mount_failed(ev):
    """FailedMount/FailedAttachVolume events (current, the pod still creating): names the volume, what backs it
    and why; a missing Secret/ConfigMap is missing-config-reference."""
    if not creating(ev):
        return None
    specific, summary = _mount_failures(ev)
    if not (specific or summary):
        return events_unknown(ev)
    best = specific or summary
    vol = _pod_volume(ev, best.group("volume") or (best.group("volumes").split() or [""])[0])
    backing, advice, check = _backing(ev, vol)
    why = best.group("detail") or best.sig.meaning
    helper = re.search(r"Output: ([^\n]+)", best.match.string)   # the mount helper's own words (mount.nfs: …)
    why += f" ({helper.group(1).strip()})" if helper else ""
    named = _named_config(best.match)
    if named:   # it exists now (else missing-config-reference): never advise creating it
        advice = f"{named[0]} {named[1]} exists, do not recreate it; delete the pod if the kubelet's retry does not mount it"
        why += (f"; {named[0]} {named[1]} exists now, so the kubelet's view lags or the event predates it: the "
                f"kubelet retries the mount (every ~2 minutes); if the pod stays stuck, delete it so it is recreated")
    lines = best.lines + ([summary.lines[0]] if specific and summary else [])
    return Hit(f"Volume {vol.get('name') or best.group('volume', 'volumes')} ({backing}) cannot be attached or "
               f"mounted on node {spec(ev.pod).get('nodeName')}: {why.strip()}", lines,
               values={"volume": vol.get("name", "?"), "backing": backing,
                       "advice": advice if named else (best.sig.fix or advice),
                       "check": check})


def _mount_failures(ev):
    """(newest specific failure, newest 'unmounted volumes' summary) among current mount events, leaving out volumes
    whose Secret/ConfigMap is missing (missing-config-reference explains those)."""
    warnings = current(ev, [e for e in pod_events(ev, sigs.MOUNT_REASONS) if e.get("type") == "Warning"])
    found = [Found(sigs.by_id(rid), m, [event_line(e)]) for e in reversed(warnings) for rid in _MOUNT_IDS
             for m in [re.search(sigs.by_id(rid).pattern, e.get("message") or "", re.I)] if m]
    explained = {_pod_volume(ev, f.group("volume")).get("name") for f in found if _missing_config(ev, f.match)}
    specific = next((f for f in found if f.sig.id in _MOUNT_IDS[:2] and not _missing_config(ev, f.match)), None)
    summary = next((f for f in found if f.sig.id in _MOUNT_IDS[2:]
                    and not set(f.group("volumes").split()) <= explained), None)
    return specific, summary


_MOUNT_IDS = ("mount-op", "multi-attach", "unmounted", "unmounted-old")


def _missing_config(ev, m):
    """A Secret/ConfigMap that does not exist: missing-config-reference explains it (one that exists now is a
    kubelet whose view lags, which this rule explains)."""
    said = _named_config(m)
    return bool(said) and ev.get(said[0], said[1], ev.target.namespace) is None


def _named_config(m):
    """(kind, name) of the Secret/ConfigMap a mount failure calls not found."""
    found = re.search(r'^(secret|configmap) "([^"]+)" not found', (m.groupdict().get("detail") or "").strip(), re.I)
    return ("Secret" if found.group(1).lower() == "secret" else "ConfigMap", found.group(2)) if found else None


def _pod_volume(ev, vname):
    """The pod's volume for a name from an event: a pod volume name, or a PersistentVolume name behind a claim."""
    vols = spec(ev.pod).get("volumes") or []
    for v in vols:
        if v.get("name") == vname:
            return v
    for v in vols:
        claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
        pvc = ev.get("PersistentVolumeClaim", claim, ev.target.namespace) if claim else None
        if pvc and spec(pvc).get("volumeName") == vname:
            return v
    return {"name": vname}


def _backing(ev, vol):
    """(what backs the volume, what to check, a command) from the pod's volume and its claim/PV when read."""
    node = spec(ev.pod).get("nodeName")
    if vol.get("persistentVolumeClaim"):
        claim = vol["persistentVolumeClaim"]["claimName"]
        pvc = ev.get("PersistentVolumeClaim", claim, ev.target.namespace) or {}
        pv = ev.get("PersistentVolume", spec(pvc).get("volumeName") or "") or {}
        driver = (spec(pv).get("csi") or {}).get("driver")
        parts = [f"PersistentVolumeClaim {claim}"] + [f"{k} {v}" for k, v in (
            ("storage class", spec(pvc).get("storageClassName")), ("volume", spec(pvc).get("volumeName")),
            ("CSI driver", driver)) if v]
        return (", ".join(parts), f"check the claim and its storage driver on node {node} (the CSI node plugin pod "
                f"there, and VolumeAttachments for the volume)",
                f"kubectl describe pvc {claim} -n {ev.target.namespace}\n"
                f"kubectl get pods -A -o wide --field-selector spec.nodeName={node} | grep -i csi\n"
                f"kubectl get volumeattachments | grep {spec(pvc).get('volumeName') or claim}")
    if vol.get("hostPath"):
        hp = vol["hostPath"]
        return (f"hostPath {hp.get('path')}" + (f" type {hp['type']}" if hp.get("type") else ""),
                f"create {hp.get('path')} on node {node} with the expected type, or fix the path",
                f"kubectl debug node/{node} -it --image=busybox -- ls -ld /host{hp.get('path')}")
    if vol.get("nfs"):
        nfs = vol["nfs"]
        return (f"NFS {nfs.get('server')}:{nfs.get('path')}",
                f"make {nfs.get('server')} reachable from node {node} and the export mountable (nfs client "
                f"utilities on the node)", f"kubectl debug node/{node} -it --image=busybox -- ping -c1 {nfs.get('server')}")
    if vol.get("csi"):
        drv = vol["csi"].get("driver")
        return (f"inline CSI volume, driver {drv}", f"check that the {drv} node plugin runs on node {node}",
                f"kubectl get csidrivers {drv}\nkubectl get pods -A -o wide --field-selector spec.nodeName={node} | grep -i csi")
    kind = next((k for k in vol if k != "name"), "unknown source")
    return (kind, "check that source", f"kubectl get pod {ev.target.name} -n {ev.target.namespace} -o yaml")
