"""Scheduling rules about what the pod claims: PVCs, the zones of their volumes, and DRA ResourceClaims."""
from __future__ import annotations

from ...kube import placement, storage
from ...kube.objects import labels, meta, namespace, spec, status
from ...kube.timeutil import seconds_between
from .._common import event_line, unscheduled
from ..registry import SPECIFIC, Hit, Line, Unknown, rule
from ._common import names, scheduler_word

CREATE_GRACE_S = 120   # controllers create generated claims within seconds; allow for a busy control plane


def _uses_pvcs(ev):
    return unscheduled(ev) and bool(storage.pod_claims(ev.pod))


def _claim_events(ev, pvc, reasons=("ProvisioningFailed", "FailedBinding", "ExternalProvisioning")):
    return [e for e in ev.events_for(pvc) if e.get("reason") in reasons]


@rule("unbound-pvc", phase="scheduling", severity="critical", rank=SPECIFIC, applies=_uses_pvcs,
      title="A PersistentVolumeClaim the pod needs is not bound",
      remediation="Fix claim $claim: create it, or fix its StorageClass / provisioner (the quoted event says why "
                  "provisioning fails), or create a matching PersistentVolume.",
      snippet="kubectl describe pvc $claim -n $namespace\nkubectl get storageclass")
def unbound_pvc(ev):
    """A referenced PVC is Pending (not merely waiting for its first consumer), Lost or missing; ProvisioningFailed quoted."""
    said, ns = scheduler_word(ev), namespace(ev.pod)
    unknown = None
    for vol, claim, ephemeral in storage.pod_claims(ev.pod):
        pvc = ev.get("PersistentVolumeClaim", claim, ns)
        ref = f"PersistentVolumeClaim {claim} (volume {vol})"
        if pvc is None:
            if said and said.says(f'persistentvolumeclaim "{claim}" not found'):
                return _hit(f"{ref} does not exist; the scheduler says: {said.text}", [said.line], claim)
            if ev.is_absent("PersistentVolumeClaim", claim, ns) and not (ephemeral and _young(ev)):
                what = "was not created by the ephemeral volume controller" if ephemeral else "does not exist"
                return _hit(f"{ref} {what} in namespace {ns}.", [Line("object", "persistentvolumeclaims",
                                                                      f"{claim} not found")], claim)
            gap = ev.gap("persistentvolumeclaims")
            unknown = unknown or (Unknown.from_gap(gap) if gap else None)
            continue
        problem = _claim_problem(ev, pvc, said)
        if problem:
            msg, lines = problem
            return _hit(f"{ref} {msg}", [Line("object", f"persistentvolumeclaims/{claim}",
                                              f"phase {storage.claim_phase(pvc)}")] + lines, claim)
    return unknown


def _young(ev):
    age = seconds_between(meta(ev.pod).get("creationTimestamp"), ev.now())
    return age is not None and age < CREATE_GRACE_S


def _hit(msg, lines, claim):
    return Hit(msg, lines, values={"claim": claim})


def _claim_problem(ev, pvc, said):
    """(message, lines) when the claim blocks the pod, else None."""
    if storage.being_deleted(pvc):
        return "is being deleted (deletionTimestamp set): a claim in deletion cannot be used.", []
    phase = storage.claim_phase(pvc)
    if phase == "Bound":
        return None
    if phase == "Lost":
        return f"is Lost: its PersistentVolume {spec(pvc).get('volumeName') or '?'} no longer exists.", []
    sc_name, sc = storage.storage_class(ev, pvc)
    events = _claim_events(ev, pvc)
    failed = [e for e in events if e.get("type") == "Warning"]
    lines = [event_line(e) for e in (failed or events)[-2:]]
    bind_said = said.family("volume-bind") if said else []
    if storage.waits_for_consumer(sc) and not failed and not bind_said:
        return None   # WaitForFirstConsumer: Pending until the scheduler picks a node; not a cause by itself
    if sc_name and sc is None and ev.is_absent("StorageClass", sc_name):
        return f"is Pending: its StorageClass {sc_name} does not exist.", lines
    if failed:
        return f"is Pending: {failed[-1].get('reason')}: {(failed[-1].get('message') or '').strip()}", lines
    if bind_said:
        return f"is Pending; the scheduler says: {'; '.join(t for _, t in bind_said)}.", [said.line] + lines
    if sc_name == "" or (sc_name is None and ev.readable("storageclasses")):
        return "is Pending: it names no StorageClass and no PersistentVolume matches it.", lines
    mode = "WaitForFirstConsumer" if storage.waits_for_consumer(sc) else "Immediate"
    last = (events[-1].get("message") or "").strip() if events else "no provisioning events"
    return f"is Pending (StorageClass {sc_name or '?'}, binding {mode}): {last}.", lines


@rule("volume-zone-conflict", phase="scheduling", severity="critical", rank=SPECIFIC, applies=_uses_pvcs,
      title="The pod's volume is pinned to where no GPU node is",
      remediation="Use a StorageClass with volumeBindingMode: WaitForFirstConsumer (the volume is then created "
                  "where the pod lands), or restore/create the volume in the GPU nodes' zone ($zones).",
      snippet="apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: <name>-wffc\nprovisioner: "
              "<same provisioner>\nvolumeBindingMode: WaitForFirstConsumer")
def volume_zone_conflict(ev):
    """A Bound PV's node affinity (zone/hostname) excludes every node that has the GPU resource; `volume node affinity conflict` in events."""
    said = scheduler_word(ev)
    if not ev.readable("nodes"):
        if said and said.parsed and said.parsed.covers_all("volume-zone"):
            return Hit(f"The scheduler reports a volume zone/node conflict on every node: {said.text}", [said.line],
                       values={"zones": "?"})
        return Unknown.from_gap(ev.gap("nodes"))
    views = placement.analyse(ev, ev.pod)
    verdict = placement.blocks(views, "volume")
    if verdict == "unknown":
        gap = ev.gap("persistentvolumes")
        return Unknown(gap.needs() if gap else "not checked: the bound PersistentVolume could not be read")
    if verdict != "blocks":
        return None
    pool = placement.deciding(views, "volume")
    pinned = [(c, pv) for c, pv in storage.bound_pvs(ev, ev.pod)
              if all(storage.pv_node_failures(pv, v.node) for v in pool)]
    if not pinned:
        return None
    claim, pv = pinned[0]
    key = storage.location_key(pv)
    zones = ", ".join(sorted({labels(v.node).get(key, "(no label)") for v in pool}))
    lines = [Line("object", f"persistentvolumes/{pv['metadata']['name']}", f"claim {c}: pinned to {storage.pv_location(p)}")
             for c, p in pinned[:3]]
    lines += [Line("node", f"nodes/{v.name}", f"{key}={labels(v.node).get(key, '(absent)')}") for v in pool[:5]]
    lines += [said.line] if said and said.family("volume-zone") else []
    return Hit(f"PersistentVolume {pv['metadata']['name']} (claim {claim}) is pinned to {storage.pv_location(pv)}; "
               f"the GPU nodes that could take the pod ({names(pool)}) have {key}={zones}.", lines, values={"zones": zones})


def _uses_claims(ev):
    return unscheduled(ev) and bool(spec(ev.pod).get("resourceClaims"))


@rule("dra-claim-unallocated", phase="scheduling", severity="critical", rank=SPECIFIC, applies=_uses_claims,
      title="A DRA ResourceClaim of the pod cannot be allocated",
      remediation="Fix $what: create the missing claim/template/DeviceClass, or get the DRA driver to publish "
                  "ResourceSlices for it (its kubelet plugin must run on the GPU nodes).",
      snippet="kubectl get resourceclaims -n $namespace\nkubectl get deviceclasses\nkubectl get resourceslices -o wide")
def dra_claim_unallocated(ev):
    """The pod's resourceClaims: a ResourceClaim is missing or unallocated, its DeviceClass is missing, or no ResourceSlice offers the device."""
    said, ns = scheduler_word(ev), namespace(ev.pod)
    unknown = None
    for entry in storage.pod_resource_claims(ev.pod):
        claim_name, tmpl = entry["claim"], entry["template"]
        if not claim_name:
            if tmpl and ev.is_absent("ResourceClaimTemplate", tmpl, ns):
                return _dra(f"ResourceClaimTemplate {tmpl} (pod claim {entry['name']}) does not exist.", [], tmpl)
            if not _young(ev):
                return _dra(f"No ResourceClaim was generated from template {tmpl} for pod claim {entry['name']} "
                            f"(status.resourceClaimStatuses has no entry).", _said(said), tmpl)
            continue
        claim = ev.get("ResourceClaim", claim_name, ns)
        if claim is None:
            if ev.is_absent("ResourceClaim", claim_name, ns) or (said and said.says(f'"{claim_name}" not found')):
                return _dra(f"ResourceClaim {claim_name} does not exist in namespace {ns}.", _said(said), claim_name)
            gap = ev.gap("resourceclaims")
            unknown = unknown or (Unknown.from_gap(gap) if gap else None)
            continue
        problem = _claim_blocker(ev, claim, claim_name, said)
        if problem:
            return problem
    return unknown


def _said(said):
    return [said.line] if said else []


def _dra(msg, lines, what):
    return Hit(msg, lines, values={"what": what})


def _claim_blocker(ev, claim, claim_name, said):
    if storage.being_deleted(claim):
        return _dra(f"ResourceClaim {claim_name} is being deleted.", _said(said), claim_name)
    if storage.claim_allocated(claim):
        if said and said.says("resourceclaim in use"):
            users = ", ".join(r.get("name", "?") for r in status(claim).get("reservedFor") or [])
            return _dra(f"ResourceClaim {claim_name} is allocated and in use by {users or 'another pod'}.",
                        _said(said), claim_name)
        return None
    lines = [Line("object", f"resourceclaims/{claim_name}", "status.allocation: none")]
    for req, cls in storage.claim_device_classes(claim):
        dc = ev.get("DeviceClass", cls)
        if dc is None and ev.is_absent("DeviceClass", cls):
            return _dra(f"ResourceClaim {claim_name} request {req} names DeviceClass {cls}, which does not exist.",
                        lines + _said(said), f"DeviceClass {cls}")
        drivers = storage.class_drivers(dc) if dc else []
        if drivers and ev.readable("resourceslices") and not any(storage.slices_of(ev, d) for d in drivers):
            return _dra(f"ResourceClaim {claim_name} is unallocated: no ResourceSlice is published by driver "
                        f"{', '.join(drivers)} (DeviceClass {cls}), so no node offers the device.",
                        lines + _said(said), f"the {', '.join(drivers)} DRA driver")
    if said and said.says(r"waiting for resource driver"):
        # Classic DRA (Kubernetes 1.26-1.30, ResourceClass + the driver's own controller): the scheduler's
        # DynamicResources plugin waits for that controller ("running Reserve plugin \"DynamicResources\": waiting
        # for resource driver to allocate resource", dra-example-driver#34).
        return _dra(f"ResourceClaim {claim_name} is unallocated: the scheduler waits for its resource driver's "
                    f"controller to allocate it, which is not running or cannot allocate ({said.text}).",
                    lines + [said.line], "the resource driver's controller")
    if said and said.says(r"cannot allocate all claims|device class \S+ does not exist|not available on the node"):
        offered = sum(storage.slice_devices(storage.slices_of(ev, d)) for _, c in storage.claim_device_classes(claim)
                      for d in storage.class_drivers(ev.get("DeviceClass", c) or {}))
        return _dra(f"ResourceClaim {claim_name} is unallocated and the scheduler cannot allocate it on any node "
                    f"({offered} device(s) published for its class): the matching devices are taken or its "
                    f"selectors match none.", lines + [said.line], f"claim {claim_name}")
    return None
