"""The expert's recipe as copy-paste commands for the target (describe, previous logs, events)."""
from __future__ import annotations

from typing import List

from .kube import podstate
from .evidence import Evidence
from .kube.objects import spec


def pod_next_commands(ev: Evidence) -> List[str]:
    pod = ev.pod or {}
    pod_name, ns = ev.target.name, ev.target.namespace
    cmds = [f"kubectl describe pod {pod_name} -n {ns}"]
    for c, cs, _ in podstate.all_container_states(pod):
        if int(cs.get("restartCount") or 0) > 0 or podstate.last_terminated(cs):
            cmds.append(f"kubectl logs {pod_name} -n {ns} -c {c['name']} --previous --tail={ev.tail_lines}")
        elif podstate.terminated(cs) and podstate.terminated(cs).get("exitCode", 0) != 0:
            cmds.append(f"kubectl logs {pod_name} -n {ns} -c {c['name']} --tail={ev.tail_lines}")
    cmds.append(f"kubectl get events -n {ns} --field-selector involvedObject.name={pod_name} "
                f"--sort-by=.lastTimestamp")
    node = spec(pod).get("nodeName")
    if node:
        cmds.append(f"kubectl gpudoctor node {node}")
    return cmds


def node_next_commands(ev: Evidence) -> List[str]:
    node = ev.target.name
    return [f"kubectl describe node {node}",
            f"kubectl get pods -A --field-selector spec.nodeName={node} -o wide"]
