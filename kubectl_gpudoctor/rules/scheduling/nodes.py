"""Scheduling rules about which GPU nodes the pod may use: selectors, taints, unavailable nodes, pod affinity."""
from __future__ import annotations

import re
from collections import Counter

from ...kube import affinity, placement, schedmsg
from ...kube.objects import labels, spec
from .._common import unscheduled
from ..registry import SPECIFIC, Hit, Line, Unknown, rule
from ._common import fmt_taint, names, node_labels_line, said_line, scheduler_word


def _event_only(ev, said, *families):
    """Nodes are unreadable: the scheduler's word decides only when those families cover every node."""
    if said and said.parsed and said.parsed.covers_all(*families):
        return said
    return None


def _reasons(said):
    return ", ".join(f"{n} {t}" for n, t in said.parsed.reasons) or said.parsed.free_text


def _views(ev):
    return placement.analyse(ev, ev.pod)


def _gpu_words(ev):
    req = placement.requested(ev.pod)
    return ", ".join(req) if req else "the pod's resources"


@rule("node-selector-mismatch", edits="pod", phase="scheduling", severity="critical", rank=SPECIFIC,
      applies=lambda ev: unscheduled(ev) and affinity.has_node_constraints(ev.pod),
      title="nodeSelector / node affinity excludes every GPU node",
      remediation="Fix the pod's nodeSelector / required nodeAffinity to match a label the GPU nodes carry, or "
                  "label the intended GPU node$relabel; the nodes' actual values are listed.")
def node_selector_mismatch(ev):
    """nodeSelector / required nodeAffinity (In, NotIn, Exists, DoesNotExist, Gt, Lt) excludes every node that has the resource."""
    said = scheduler_word(ev)
    if not ev.readable("nodes"):
        said = _event_only(ev, said, "selector")
        if said:
            n = sum(c for c, _ in said.family("selector"))
            return Hit(f"The scheduler reports that {n} node(s) fail the pod's node selector/affinity and no other "
                       f"node is a candidate ({_reasons(said)}; nodes unreadable: labels not compared).", [said.line],
                       values={"relabel": ""})
        return Unknown.from_gap(ev.gap("nodes"))
    views = _views(ev)
    if placement.blocks(views, "selector") != "blocks":
        return None
    failing = Counter(f for v in views for f in v.fails["selector"])
    top = failing.most_common(1)[0][0]
    keys = affinity.selector_keys(ev.pod)
    lines = [Line("spec", "spec.nodeSelector / affinity.nodeAffinity", f) for f in failing][:4]
    lines += node_labels_line(views, keys) + said_line(said, "selector")
    failing_reqs = Counter(r for v in views for r in affinity.failing_requirements(ev.pod, v.node))
    match = _matching_value(views, failing_reqs)
    fix = (f"Set {match[0]} to \"{match[1]}\" in the pod's node constraints ({match[2]} of the {len(views)} GPU "
           f"node(s) carry it; snippet below) if that GPU will do; else add or label a node that has what the pod "
           f"wants$relabel.") if match else None
    # terms ORed together are quoted whole; else each key: what the pod wants, what the GPU nodes have
    why = top if " OR " in top else _wanted_vs_have(ev.pod, views, failing_reqs) or top
    return Hit(f"The pod's node constraints exclude all {len(views)} node(s) that advertise {_gpu_words(ev)} "
               f"({names(views)}): {why}.", lines,
               snippet=_selector_snippet(views, keys, match, failing_reqs), fix=fix,
               values={"relabel": _relabel(ev.pod, views)})


def _wanted_vs_have(pod, views, failing_reqs) -> str:
    """Per failing key, what the pod wants and the values the GPU nodes carry: `nodeSelector
    nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB wanted, the GPU nodes have NVIDIA-A100-SXM4-40GB ×3`."""
    parts = []
    for key in dict.fromkeys(k for k, _ in failing_reqs):
        vals = Counter(labels(v.node).get(key) for v in views)
        have = [f"{val} ×{n}" for val, n in vals.most_common(4) if val is not None]
        have += [f"no {key} label ×{vals[None]}"] if vals.get(None) else []
        parts.append(f"{_wanted(pod, key)} wanted, the GPU nodes have {', '.join(have)}")
    return "; ".join(parts)


def _wanted(pod, key) -> str:
    want = (spec(pod).get("nodeSelector") or {}).get(key)
    exprs = [affinity.requirement_text(e) for t in affinity.required_node_terms(pod)
             for e in t.get("matchExpressions") or [] if e.get("key") == key]
    return " and ".join(([f"nodeSelector {key}={want}"] if want is not None else []) + exprs) or key


def _matching_value(views, failing_reqs):
    """(key, value, nodes) that would make an equality or In requirement match: the value most GPU nodes carry."""
    for (key, op), _ in failing_reqs.most_common():
        present = Counter(labels(v.node)[key] for v in views if key in labels(v.node))
        if present and op in ("=", "In"):
            val, n = present.most_common(1)[0]
            return key, val, n, op
    return None


# Labels set from the machine (the cloud provider, the kubelet, GPU/node feature discovery): relabelling a node
# lies about its hardware, and the labeller writes its own value back.
_HARDWARE_LABELS = (
    (r"^(cloud\.google\.com|eks\.amazonaws\.com|kubernetes\.azure\.com|k8s\.amazonaws\.com)/|^karpenter\.",
     "the node's provider sets these labels from its hardware"),
    (r"^(node|topology)\.kubernetes\.io/|^kubernetes\.io/", "the kubelet and the provider set these labels"),
    (r"^nvidia\.com/(gpu\.(product|memory|count|family|machine|compute\.|replicas|sharing-strategy|present)|"
     r"cuda\.|mig\.capable|gfd\.)", "GPU feature discovery sets it from the GPU itself"),
    (r"^feature\.node\.kubernetes\.io/", "node feature discovery sets it from the hardware"),
)


def _relabel(pod, views) -> str:
    """The label command for the first GPU node and the first nodeSelector pair it lacks (affinity terms: none)."""
    node = views[0].node if views else None
    pair = next(((k, v) for k, v in (spec(pod).get("nodeSelector") or {}).items() if labels(node).get(k) != v), None)
    name_ = ((node or {}).get("metadata") or {}).get("name")
    managed = next((why for rx, why in _HARDWARE_LABELS if pair and re.search(rx, pair[0])), None)
    if managed:
        return f" (not by relabelling {pair[0]}: {managed})"
    return f" (`kubectl label node {name_} {pair[0]}={pair[1]} --overwrite`)" if pair and name_ else \
        " with the label the pod's node affinity requires"


def _selector_snippet(views, keys, match, failing_reqs):
    """The GPU nodes' actual values for the selected keys, and a selector that matches them when the
    failing requirement is an equality (nodeSelector) or an In expression."""
    out = ["# values the GPU nodes actually carry for the selected keys:"]
    for key in keys:
        vals = Counter(labels(v.node).get(key) for v in views)
        shown = ", ".join(f"{val} ({n} node(s))" for val, n in vals.most_common(4) if val is not None) or "absent"
        out.append(f"#   {key}: {shown}")
    if match:
        key, val, _, op = match
        if op == "=":
            out += ["nodeSelector:", f"  {key}: \"{val}\""]
        else:
            out += ["- key: " + key, "  operator: In", f"  values: [\"{val}\"]"]
    return "\n".join(out)


@rule("untolerated-taint", phase="scheduling", severity="critical", rank=SPECIFIC, applies=unscheduled,
      title="GPU nodes carry a taint the pod does not tolerate",
      remediation="Add a toleration for the taint to the pod template (GPU node pools are often tainted "
                  "nvidia.com/gpu so that only GPU pods land there).")
def untolerated_taint(ev):
    """The nodes that would take the pod (advertise its GPUs, match its selector) carry NoSchedule/NoExecute taints it does not tolerate."""
    said = scheduler_word(ev)
    if not ev.readable("nodes"):
        said = _event_only(ev, said, "taint")
        # the event names no effect: a toleration without one matches every effect
        keys = [{"key": k, "value": v, "effect": None} for _, t in (said.family("taint") if said else [])
                for k, v in schedmsg.taints_in(t) if not k.startswith(placement.CONDITION_TAINT_PREFIX)]
        workers = [t for t in keys if not t["key"].startswith("node-role.kubernetes.io/")]
        keys = workers or keys   # tolerate a control-plane taint only when nothing else is tainted
        if said and (keys or not any(schedmsg.taints_in(t) for _, t in said.family("taint"))):
            return Hit(f"The scheduler reports that every node has a taint the pod does not tolerate: "
                       f"{'; '.join(t for _, t in said.family('taint'))} (nodes unreadable).", [said.line],
                       snippet=placement.toleration_snippet(keys) if keys else None)
        return Unknown.from_gap(ev.gap("nodes"))
    views = _views(ev)
    if placement.blocks(views, "taint") != "blocks":
        return None
    pool = placement.deciding(views, "taint")
    taints = [t for v in pool for t in v.fails["taint"]]
    lines = [Line("node", f"nodes/{v.name}.spec.taints", ", ".join(fmt_taint(t) for t in v.fails["taint"]))
             for v in pool[:5]] + said_line(said, "taint")
    return Hit(f"All {len(pool)} node(s) that could take the pod ({names(pool)}) carry taints it does not tolerate: "
               f"{', '.join(sorted({fmt_taint(t) for t in taints}))}.", lines,
               snippet=placement.toleration_snippet(taints))


@rule("gpu-nodes-unavailable", phase="scheduling", severity="critical", rank=SPECIFIC, applies=unscheduled,
      title="Every GPU node the pod could use is cordoned or not ready",
      remediation="Bring the GPU node(s) back: uncordon them when the maintenance is over, or find out why they "
                  "are NotReady (kubelet, driver, network); tolerating the node.kubernetes.io taints is not the fix.",
      snippet="kubectl get nodes $nodes -o wide\nkubectl describe node $first   # Conditions, Taints, Unschedulable")
def gpu_nodes_unavailable(ev):
    """Every node that advertises the pod's GPUs (and matches its selector) is cordoned, NotReady or unreachable."""
    said = scheduler_word(ev)
    if not ev.readable("nodes"):
        said = _event_only(ev, said, "unschedulable")
        if said:
            return Hit(f"The scheduler reports that every node is unschedulable: "
                       f"{'; '.join(t for _, t in said.family('unschedulable'))} (nodes unreadable).", [said.line],
                       values={"nodes": "", "first": "<node>"})
        return Unknown.from_gap(ev.gap("nodes"))
    views = _views(ev)
    if placement.blocks(views, "unavailable") != "blocks":
        return None
    pool = placement.deciding(views, "unavailable")
    lines = [Line("node", f"nodes/{v.name}", v.fails["unavailable"]) for v in pool[:6]]
    return Hit(f"All {len(pool)} node(s) that could take the pod are unavailable: "
               + "; ".join(f"{v.name}: {v.fails['unavailable']}" for v in pool[:6]) + ".", lines,
               values={"nodes": " ".join(v.name for v in pool[:6]), "first": pool[0].name},
               next=[f"kubectl gpudoctor node {v.name}" for v in pool[:3]])


def _has_pod_affinity(ev):
    return unscheduled(ev) and bool(affinity.required_pod_terms(ev.pod) or
                                    affinity.required_pod_terms(ev.pod, "podAntiAffinity"))


@rule("pod-affinity-unsatisfiable", edits="pod", phase="scheduling", severity="critical", rank=SPECIFIC, applies=_has_pod_affinity,
      title="Required pod affinity can only be met where there is no free GPU",
      remediation="Relax the term to preferredDuringSchedulingIgnoredDuringExecution, or move the peer pods onto "
                  "GPU nodes (or the GPU nodes into the peers' topology domain).")
def pod_affinity_unsatisfiable(ev):
    """Required podAffinity/podAntiAffinity can only be met on nodes that lack the GPU resource or are full."""
    said = scheduler_word(ev)
    if not ev.readable("nodes"):
        said = _event_only(ev, said, "pod-affinity", "pod-anti-affinity")
        if said:
            return Hit(f"The scheduler reports that no node satisfies the pod's (anti-)affinity: "
                       f"{'; '.join(t for _, t in said.parsed.reasons)} (nodes unreadable).", [said.line])
        return Unknown.from_gap(ev.gap("nodes"))
    views = _views(ev)
    verdict = placement.blocks(views, "affinity")
    if verdict == "unknown":
        return Unknown("not checked: the pods matching the affinity terms could not be listed")
    if verdict == "blocks":
        pool = placement.deciding(views, "affinity")
        reasons = Counter(v.fails["affinity"] for v in pool)
        return Hit(f"No node that could take the pod satisfies its required pod (anti-)affinity: "
                   f"{reasons.most_common(1)[0][0]}.", _affinity_lines(ev, views) + said_line(said, "pod-affinity"))
    return _pinned_to_full(ev, views, said) or _said_affinity(ev, views, said)


def _said_affinity(ev, views, said):
    """The scheduler's own words first: it says the (anti-)affinity rejects exactly the nodes the other predicates
    leave, though the peer pods that decide it were not all read (old and new predicate wording alike)."""
    if not (said and said.parsed):
        return None
    named = sum(n for n, _ in said.parsed.reasons_of("pod-affinity", "pod-anti-affinity"))
    left = [v for v in placement.selected(views) if not (set(v.fails) - {"affinity"})]
    if not named or not left or named < len(left):
        return None
    return Hit(f"The scheduler says {named} node(s) fail the pod's required pod (anti-)affinity, and those are the "
               f"only nodes its other predicates leave ({names(left)}): {said.text}", _affinity_lines(ev, views)
               + [said.line])


def _pinned_to_full(ev, views, said):
    """Affinity is met only on full nodes while another eligible node has room."""
    pool = [v for v in placement.selected(views) if not (set(v.fails) - {"affinity"})]
    met = [v for v in pool if "affinity" not in v.fails]
    roomy = [v for v in pool if "affinity" in v.fails and placement.knows_free(ev, v.node)
             and not placement.shortfall(ev, ev.pod, v.node)]
    if not met or not roomy or any(not placement.shortfall(ev, ev.pod, v.node) for v in met):
        return None
    full = "; ".join(f"{v.name} lacks " + ", ".join(f"{r} (needs {n}, free {f})" for r, (n, f) in
                                                     placement.shortfall(ev, ev.pod, v.node).items()) for v in met[:4])
    return Hit(f"The pod's required pod affinity pins it to {names(met)}, which has no room ({full}); "
               f"{names(roomy)} has room but fails the affinity: {roomy[0].fails['affinity']}.",
               _affinity_lines(ev, views) + said_line(said, "pod-affinity"))


def _affinity_lines(ev, views):
    lines, gpu_nodes = [], {v.name for v in views}
    for kind in ("podAffinity", "podAntiAffinity"):
        for term in affinity.required_pod_terms(ev.pod, kind):
            lines.append(Line("spec", f"affinity.{kind}", affinity.term_text(term, ev.pod)))
            for p in affinity.peers(ev.all("Pod"), term, ev.pod)[:4]:
                node = spec(p).get("nodeName")
                gpu = "advertises" if node in gpu_nodes else "lacks"
                lines.append(Line("object", f"pods/{p['metadata']['name']}",
                                  f"runs on {node}, which {gpu} {_gpu_words(ev)}"))
    return lines[:8]
