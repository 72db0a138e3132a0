"""Whether a node autoscaler is adding a node for a pod, read from its events; pure."""
from __future__ import annotations

from typing import Optional

from ..evidence import Evidence, event_time
from .timeutil import seconds_between

# A GPU node takes minutes to join (boot, driver, device plugin); a scale-up older than this did not help.
SCALE_UP_WINDOW_S = 15 * 60


def provisioning(ev: Evidence) -> Optional[dict]:
    """A node autoscaler's newest 'a node is coming' event for the pod (cluster-autoscaler TriggeredScaleUp,
    e.g. `pod triggered scale-up: [{gpu-pool 0->1 (max: 4)}]`; Karpenter `Nominated`)."""
    if ev.pod is None:
        return None
    found = [e for e in ev.events_for(ev.pod) if e.get("reason") in ("TriggeredScaleUp", "Nominated")]
    return found[-1] if found else None


def scaling_up(ev: Evidence) -> Optional[dict]:
    """The autoscaler's event when it acted for the pod within the window: the pod is being served, not stuck."""
    prov = provisioning(ev)
    age = seconds_between(event_time(prov), ev.now()) if prov else None
    return prov if age is not None and age < SCALE_UP_WINDOW_S else None
