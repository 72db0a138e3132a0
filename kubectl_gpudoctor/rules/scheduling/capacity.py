"""Scheduling rules about capacity (free GPUs, CPU/memory/pod slots on the GPU nodes) and a scheduler that never acts."""
from __future__ import annotations

import re

from ...gpu import nodeview
from ...kube import affinity, placement, schedmsg
from ...kube.objects import condition, is_gpu_resource, labels, meta, spec
from ...kube.quantity import format_bytes
from ...kube.timeutil import human_duration, seconds_between
from .._common import unscheduled
from ..registry import DEFAULT, GENERIC, Hit, Line, Unknown, rule
from ._common import fmt_taint, scheduler_word, stack_cause, wants_device, with_scale_up

CORE_REASONS = r"^Insufficient (cpu|memory|ephemeral-storage|hugepages-\S+)$|^Too many pods$"
# Rows of the GPU node table a finding shows: on a cluster of 2,000 GPU nodes, whose pods are listed for only a few
# (collect/pod.py MAX_NODE_POD_LISTS), the whole table is rows of unknown usage that bury the ones that matter.
SHOWN_ROWS = 20


def _amount(res, value):
    if res in ("memory", "ephemeral-storage"):
        return format_bytes(int(max(value, 0)))
    return f"{value:g}" if res == "pods" else f"{max(value, 0):.2f}".rstrip("0").rstrip(".")


@rule("insufficient-gpu", phase="scheduling", severity="critical", rank=DEFAULT, applies=wants_device,
      title="Not enough free GPUs on any node",
      remediation="Wait for GPUs to free up, add GPU nodes (or let the autoscaler add them), or free GPUs held "
                  "by the pods listed; lower the request if the workload can run on fewer GPUs.",
      snippet="kubectl get pods -A --field-selector spec.nodeName=$candidate -o wide   # who holds the GPUs")
def insufficient_gpu(ev):
    """The scheduler says `Insufficient <gpu resource>` or no node the pod may use has enough free (warning while an autoscaler adds a node).

    A node autoscaler's TriggeredScaleUp or Nominated event for the pod in the last 15 minutes makes it a warning."""
    said = scheduler_word(ev)
    claims = [(n, r) for n, r in schedmsg.insufficient_resources(said.parsed) if is_gpu_resource(r)] \
        if said and said.parsed else []
    if not ev.readable("nodes"):
        if not claims:
            return Unknown.from_gap(ev.gap("nodes"))
        text = ", ".join(f"{n} node(s) Insufficient {r}" for n, r in claims)
        return with_scale_up(ev, Hit(f"The scheduler reports {text} (of {said.parsed.total}). The nodes could not "
                                     f"be read, so this may also mean that no node advertises the resource at all.",
                                     [said.line], values={"candidate": "<node>"}))
    views = placement.analyse(ev, ev.pod)
    if not views:
        return None  # nothing advertises it: gpu-not-advertised / mig-profile-mismatch / rdma-not-advertised
    pool = placement.capacity_pool(views)
    shortage = schedmsg.device_shortage(said.parsed) if said else []
    if shortage and said.parsed.covers_all("insufficient"):
        return with_scale_up(ev, _sharing_shortage(ev, views, pool, said, shortage))
    room = placement.room(ev, ev.pod)   # free, or big enough when unknown
    if any(placement.knows_free(ev, v.node) for v in room):
        return None
    if room and not claims:
        gap = ev.gap("pods")
        return Unknown(gap.needs() if gap else "not checked: the pods on the GPU nodes were not listed")
    return with_scale_up(ev, _with_stack(ev, _shortage_hit(ev, views, pool, said if claims else None)))


def _with_stack(ev, hit):
    """Name what the GPU nodes' own stack takes away (GPUs marked unhealthy, a broken device plugin)."""
    cause = stack_cause(ev, nodeview.stack_nodes(ev, ev.pod), order=("unhealthy", "plugin", "operator", "zero"),
                        lead="The GPU nodes' own stack takes GPUs away too")
    if cause:
        hit.message += f" {cause[0]}"
        hit.evidence += cause[1]
    return hit


def _sharing_shortage(ev, views, pool, said, shortage):
    """A GPU-sharing scheduler's own 'fits no node' (Volcano vGPU, HAMi): allocatable counts shares, while each
    requested vGPU must sit on a distinct physical card, so the scheduler's word outranks free units."""
    need = max(placement.requested(ev.pod).values(), default=0)
    cards = {v.name: nodeview.physical_gpus(v.node) for v in pool}
    known = {n: c for n, c in cards.items() if c is not None}
    msg = f"The scheduler says the pod's device request fits no node: \"{shortage[0][1]}\""
    if known and need > max(known.values()):
        msg += (f". The pod asks for {need} GPU units; its sharing scheme puts each on a different physical card and "
                f"the largest node has {max(known.values())} cards ({', '.join(f'{n}: {c}' for n, c in known.items())}),"
                f" so it can never schedule as requested")
        fix = (f"Request at most {max(known.values())} GPU units per pod (each vGPU of a pod needs its own card), or "
               f"add nodes with at least {need} GPUs.")
    else:
        msg += (". Node allocatable counts shares of GPUs, but the sharing scheduler also needs distinct physical "
                "cards (and GPU memory) for each requested unit")
        fix = None
    table = [r for res in placement.requested(ev.pod) for r in placement.gpu_table(ev, res, [v.node for v in views])]
    table, note = _shown(table, {v.name for v in pool})
    hit = Hit(msg + "." + note, [said.line], values={"candidate": pool[0].name if pool else "<node>"}, table=table,
              fix=fix, summary=f"No node fits the pod's GPU request (the scheduler: {shortage[0][1][:80]})")
    return hit


def _shown(table, pool_names):
    """(rows shown, a sentence saying what was left out): the whole table when short; else the rows that say most
    (eligible nodes whose usage is known, most free first; then nodes with free GPUs the pod may not use; then
    eligible nodes), kept in the table's order."""
    if len(table) <= SHOWN_ROWS:
        return table, ""

    def weight(item):
        i, r = item
        eligible, known = r["node"] in pool_names, r["free"] is not None
        return not (eligible and known), not (known and r["free"] > 0), not eligible, -(r["free"] or 0), i
    kept = sorted(i for i, _ in sorted(enumerate(table), key=weight)[:SHOWN_ROWS])
    unknown = sum(r["free"] is None for r in table)
    why = f"; {unknown:,} of them with usage unknown, their pods not listed" if unknown else ""
    return [table[i] for i in kept], (f" The table shows {SHOWN_ROWS} of its {len(table):,} rows{why} (eligible nodes "
                                      f"with known usage first).")


def _shortage_hit(ev, views, pool, said):
    table, short, never = [], [], []
    pool_names = {v.name for v in pool}
    by_name = {v.name: v for v in reversed(views)}   # the first view of a name, as a scan from the start finds it
    for res, need in placement.requested(ev.pod).items():
        rows = placement.gpu_table(ev, res, [v.node for v in views])
        for r in rows:
            fails = ", ".join(sorted(by_name[r["node"]].fails))
            r["eligible"] = ("yes" + (f" (also blocked: {fails})" if fails else "")) if r["node"] in pool_names \
                else f"no ({fails})"
        table += rows
        frees = [r["free"] for r in rows if r["node"] in pool_names and r["free"] is not None]
        if not frees or max(frees) >= need:
            continue
        total = sum(max(f, 0) for f in frees)
        biggest = max(r["allocatable"] for r in rows if r["node"] in pool_names)
        if need > biggest:
            never.append((res, need, biggest))
        note = f"; {total} are free in total but no single node has {need} (fragmentation)" if total >= need else ""
        short.append(f"the pod needs {need} {res}, the most free on one eligible node is {max(frees)}{note}")
    lines = [said.line] if said else []
    for r in sorted((r for r in table if r["node"] in pool_names), key=lambda r: -(r["free"] or 0))[:3]:
        held = placement.holders(ev, ev.get("Node", r["node"]), r["resource"])
        if held:
            lines.append(Line("node", f"nodes/{r['node']}", f"{r['resource']} held by: {', '.join(held[:8])}"))
    roomy = list(dict.fromkeys(r["node"] for r in table if r["node"] not in pool_names and (r["free"] or 0) > 0))
    unknown = any(r["free"] is None for r in table if r["node"] in pool_names)
    msg = "; ".join(short) or (f"the scheduler reports {said.text.split(' preemption:')[0].rstrip('.')}; the pods on "
                               f"the GPU nodes were not listed, so used/free per node are unknown" if unknown and said
                               else "the eligible nodes lack free capacity for the pod's device requests")
    if roomy:   # free GPUs exist: say what keeps the pod off them (the label it would need), never "no node"
        msg += (". Nodes with free GPUs the pod may not use: "
                + "; ".join(f"{n} with {_free(table, n)} free ({_why_not(by_name[n])})" for n in sorted(roomy)[:3])
                + (f"; and {len(roomy) - 3} more" if len(roomy) > 3 else "") + " (see table)")
    best = max((r for r in table if r["node"] in pool_names), key=lambda r: r["free"] or 0, default=None)
    values = {"candidate": best["node"] if best else "<node>"}
    table, note = _shown(table, pool_names)
    if never:
        res, need, biggest = never[0]
        return Hit(f"The pod requests {need} {res} but the largest eligible node has {biggest} allocatable: it can "
                   f"never schedule, however long it waits ({msg}).{note}", lines, values=values, table=table,
                   fix=f"Request at most {biggest} {res} per pod (split the work across pods, e.g. a multi-node job), "
                       f"or add nodes with at least {need} {res}.",
                   summary=f"The pod requests {need} {res}; no eligible node has more than {biggest}")
    relax = _relax(ev.pod, by_name, table, roomy)
    return Hit(msg[0].upper() + msg[1:] + "." + note, lines, values=values,
               table=table, summary=f"No node {'the pod may use ' if roomy else ''}has enough free GPUs "
                                    f"({msg.split(';')[0].split('. ')[0]})",
               **(dict(fix=relax[0], snippet=relax[1], edits="pod", next=[_HOLDERS]) if relax else {}))


_HOLDERS = "kubectl get pods -A --field-selector spec.nodeName=$candidate -o wide   # who holds the GPUs"


def _relax(pod, by_name, table, roomy):
    """(fix, snippet) letting the pod onto the node with the most free GPUs it may not use (as many as it asks), when only its selector
    (an equality or In requirement the node's label can meet) or taints keep it off: the value that node carries
    filled in. None when something else excludes it (cordoned, a volume's zone) or no value would match."""
    need = placement.requested(pod)
    free = lambda n: sum(r["free"] or 0 for r in table if r["node"] == n)
    fits = [n for n in roomy if all(any(r["node"] == n and r["resource"] == res and (r["free"] or 0) >= k
                                        for r in table) for res, k in need.items())]
    node = max(fits, key=lambda n: (free(n), n), default=None)   # a node with fewer free than asked would not do
    view = by_name.get(node)
    if view is None or set(view.fails) - {"selector", "taint"}:
        return None
    have, fixes, out = labels(view.node), [], ["# pod spec"]
    wanted = affinity.failing_requirements(pod, view.node) if view.fails.get("selector") else []
    if any(op not in ("=", "In") or key not in have for key, op in wanted) or \
            (any(op == "In" for _, op in wanted) and len(affinity.required_node_terms(pod)) != 1):
        return None   # a NotIn / Exists / missing label, or ORed terms: which change is meant is the user's call
    selector = {k: have[k] for k, op in wanted if op == "="}
    if selector:
        fixes.append("set nodeSelector " + ", ".join(f"{k}=\"{v}\"" for k, v in selector.items()))
        out += ["nodeSelector:"] + [f"  {k}: \"{v}\"" for k, v in selector.items()]
    for key in dict.fromkeys(k for k, op in wanted if op == "In"):
        fixes.append(f"add \"{have[key]}\" to the values of the required nodeAffinity {key} In")
        out += ["# add to spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution:",
                f"- key: {key}", "  operator: In", f"  values: [\"{have[key]}\"]"]
    taints = view.fails.get("taint") or []
    if taints:
        fixes.append("tolerate " + ", ".join(fmt_taint(t) for t in taints))
        out += placement.toleration_snippet(taints).split("\n")
    if not fixes:
        return None
    fix = (f"Let the pod use node {node} ({_free(table, node)} free): {' and '.join(fixes)} in the pod spec (snippet "
           f"below), if that node's GPUs will do; else free GPUs on $candidate (held by the pods listed) or add GPU "
           f"nodes the pod may use.")
    return fix, "\n".join(out)


def _free(table, node) -> str:
    return ", ".join(f"{r['free']} {r['resource']}" for r in table if r["node"] == node and r["free"])


def _why_not(view) -> str:
    """What keeps the pod off a node with free GPUs, in its own words: the label its selector wants and the node's."""
    fails = view.fails
    if fails.get("selector"):   # "nodeSelector K=V (node has K=W)" -> "nodeSelector K=V: the node has K=W"
        return re.sub(r" \((node has [^()]*)\)$", r": the \1", str(fails["selector"][0]))
    if fails.get("taint"):
        return "taint " + ", ".join(fmt_taint(t) for t in fails["taint"][:2])
    why = next((fails[k] for k in ("unavailable", "volume", "affinity") if fails.get(k)), "not eligible")
    return str(why[0] if isinstance(why, list) else why)


@rule("insufficient-node-resources", edits="container", phase="scheduling", severity="critical", rank=DEFAULT, applies=unscheduled,
      title="GPU nodes lack the CPU, memory or pod slots the pod requests",
      remediation="Lower the pod's $res request to what a GPU node can give, or free $res on the nodes listed "
                  "(allocatable is below capacity: system reservations and DaemonSets take their share).",
      snippet="kubectl describe node $candidate | sed -n '/Allocatable:/,/Events:/p'")
def insufficient_node_resources(ev):
    """Nodes with enough free GPUs for the pod lack its cpu / memory / ephemeral-storage requests or pod slots (`Insufficient memory`)."""
    said = scheduler_word(ev)
    core = said.parsed.matching(CORE_REASONS) if said and said.parsed else []
    if not wants_device(ev):
        # A pod next to the GPU workload that requests no device (a database, a cache): the scheduler's own words
        # decide, since the pods on every node of the cluster are not listed to compute free CPU and memory.
        if core and said.parsed.covers_all("insufficient") and not any("/" in t for _, t in core):
            return with_scale_up(ev, Hit(f"No node has room for the pod: the scheduler reports "
                                         f"{', '.join(f'{n} node(s) {t}' for n, t in core)}.", [said.line],
                                         values={"res": core[0][1].split()[-1], "candidate": "<node>"}))
        return None
    if not ev.readable("nodes"):
        if core and said.parsed.covers_all("insufficient") and not any("/" in t for _, t in core):
            return Hit(f"The scheduler reports {', '.join(f'{n} node(s) {t}' for n, t in core)} (nodes unreadable).",
                       [said.line], values={"res": core[0][1].split()[-1], "candidate": "<node>"})
        return Unknown.from_gap(ev.gap("nodes"))
    pod = ev.pod   # read once: the loops below run once per node
    roomy = placement.room(ev, pod)
    if not roomy:
        return None   # the GPUs themselves are short: insufficient-gpu
    shorts = {v.name: placement.core_shortfall(ev, pod, v.node) for v in roomy}
    if any(s == {} for s in shorts.values()):
        return None
    if any(s is None for s in shorts.values()):
        gap = ev.gap("pods")
        return Unknown(gap.needs() if gap else "not checked: the pods on the GPU nodes were not listed")
    parts, lines = [], [said.line] if core else []
    for node, short in list(shorts.items())[:5]:
        text = "; ".join(f"{r}: needs {_amount(r, n)}, {_amount(r, f)} free of {_amount(r, a)} allocatable"
                         for r, (n, f, a) in short.items())
        parts.append(f"{node} ({text})")
        lines.append(Line("node", f"nodes/{node}.status.allocatable", text))
    first = next(iter(next(iter(shorts.values()))))
    never = all(any(n > a for n, _, a in s.values()) for s in shorts.values())
    lead = ("No GPU node can ever fit the pod: its request exceeds their allocatable" if never else
            "The GPU nodes with free GPUs lack other resources the pod requests")
    return Hit(f"{lead}: {', '.join(parts)}.", lines, values={"res": first, "candidate": roomy[0].name})


def _queue_free(ev):
    s = spec(ev.pod)
    return unscheduled(ev) and not s.get("schedulingGates") and not s.get("resourceClaims")


@rule("no-scheduler-activity", phase="scheduling", severity="critical", rank=GENERIC, applies=_queue_free,
      title="No scheduler has looked at the pod",
      remediation="Make sure the scheduler named in spec.schedulerName ($scheduler) is installed and running "
                  "(a typo there leaves the pod Pending forever), or remove schedulerName to use the default scheduler.",
      snippet="kubectl get pods -A | grep -i $scheduler\nkubectl get pod $pod -n $namespace -o jsonpath='{.spec.schedulerName}'")
def no_scheduler_activity(ev):
    """Pending for minutes with no PodScheduled condition and no FailedScheduling event: no scheduler has acted on it."""
    if scheduler_word(ev) or condition(ev.pod, "PodScheduled"):
        return None
    age = seconds_between(meta(ev.pod).get("creationTimestamp"), ev.now())
    if age is None or age < 300:
        return None
    name = spec(ev.pod).get("schedulerName") or "default-scheduler"
    custom = name != "default-scheduler"
    where = ("no scheduler by that name seems to run (is it installed, and spelled right?)" if custom else
             "kube-scheduler has not processed it (is the control plane's scheduler healthy?)")
    return Hit(f"The pod has been Pending for {human_duration(age)} and no scheduler has recorded any decision "
               f"(no PodScheduled condition, no FailedScheduling event). spec.schedulerName is {name}: {where}.",
               [Line("spec", "spec.schedulerName", name), Line("status", "status.conditions", "no PodScheduled condition")],
               severity=None if custom else "warning", values={"scheduler": name})
