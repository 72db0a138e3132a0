"""The scheduler's matching rules as pure functions: nodeSelector, required node affinity, label selectors, pod affinity."""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional

from .objects import labels, name, namespace, spec

# --- node selector / required node affinity ---------------------------------------------


def requirement_text(expr: dict) -> str:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    if op in ("Exists", "DoesNotExist"):
        return f"{key} {op}"
    if op in ("Gt", "Lt"):
        return f"{key} {op} {values[0] if values else '?'}"
    return f"{key} {op} [{', '.join(values)}]"


def expression_matches(node_labels: Dict[str, str], expr: dict) -> bool:
    """One NodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) against a label set."""
    key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    has = key in node_labels
    val = node_labels.get(key)
    if op == "In":
        return has and val in values
    if op == "NotIn":
        return not has or val not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt"):
        try:   # both sides must parse as integers, else the requirement does not match
            have, want = int(val), int(values[0])
        except (TypeError, ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def _field_matches(node: dict, expr: dict) -> bool:
    # matchFields supports only metadata.name
    if expr.get("key") != "metadata.name":
        return False
    return expression_matches({"metadata.name": name(node)}, expr)


def term_failures(node: dict, term: dict) -> List[str]:
    """Requirements of one nodeSelectorTerm the node fails (ANDed); an empty term matches nothing."""
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return ["empty nodeSelectorTerm (matches no node)"]
    lab = labels(node)
    out = [_explain(e, lab) for e in exprs if not expression_matches(lab, e)]
    out += [f"{requirement_text(e)} (node name is {name(node)})" for e in fields if not _field_matches(node, e)]
    return out


def _explain(expr: dict, node_labels: Dict[str, str]) -> str:
    key = expr.get("key", "")
    have = f"node has {key}={node_labels[key]}" if key in node_labels else f"node has no {key} label"
    return f"{requirement_text(expr)} ({have})"


def required_node_terms(pod: dict) -> List[dict]:
    na = (spec(pod).get("affinity") or {}).get("nodeAffinity") or {}
    return (na.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []


def has_node_constraints(pod: dict) -> bool:
    na = (spec(pod).get("affinity") or {}).get("nodeAffinity") or {}
    return bool(spec(pod).get("nodeSelector") or na.get("requiredDuringSchedulingIgnoredDuringExecution"))


def selector_failures(pod: dict, node: dict) -> List[str]:
    """Why the pod's nodeSelector / required node affinity excludes the node (empty: it matches)."""
    lab = labels(node)
    out = []
    for key, want in (spec(pod).get("nodeSelector") or {}).items():
        if lab.get(key) != want:
            have = f"node has {key}={lab[key]}" if key in lab else f"node has no {key} label"
            out.append(f"nodeSelector {key}={want} ({have})")
    na = (spec(pod).get("affinity") or {}).get("nodeAffinity") or {}
    if "requiredDuringSchedulingIgnoredDuringExecution" in na:
        terms = required_node_terms(pod)
        per_term = [term_failures(node, t) for t in terms]
        if not any(not f for f in per_term):   # terms are ORed: one matching term is enough
            failed = [f[0] for f in per_term if f] or ["no nodeSelectorTerms"]
            out.append("required nodeAffinity " + " OR ".join(failed))
    return out


def failing_requirements(pod: dict, node: dict) -> List[tuple]:
    """(key, operator) of every nodeSelector entry / required-affinity expression the node fails."""
    lab = labels(node)
    out = [(k, "=") for k, v in (spec(pod).get("nodeSelector") or {}).items() if lab.get(k) != v]
    terms = required_node_terms(pod)
    if terms and all(term_failures(node, t) for t in terms):
        for term in terms:
            out += [(e.get("key"), e.get("operator")) for e in term.get("matchExpressions") or []
                    if not expression_matches(lab, e)]
    return out


def selector_keys(pod: dict) -> List[str]:
    """Label keys the pod's node constraints look at (to show the nodes' actual values)."""
    keys = list((spec(pod).get("nodeSelector") or {}).keys())
    for term in required_node_terms(pod):
        keys += [e.get("key") for e in term.get("matchExpressions") or [] if e.get("key")]
    return list(dict.fromkeys(keys))


# --- label selectors (metav1.LabelSelector) ----------------------------------------------

def label_selector_matches(selector: Optional[dict], obj_labels: Dict[str, str]) -> bool:
    """A null selector matches nothing; an empty one matches everything."""
    if selector is None:
        return False
    for key, want in (selector.get("matchLabels") or {}).items():
        if obj_labels.get(key) != want:
            return False
    return all(expression_matches(obj_labels, e) for e in selector.get("matchExpressions") or [])


def selector_query(selector: Optional[dict]) -> Optional[str]:
    """The `labelSelector=` query string for a LabelSelector (None when it cannot be expressed)."""
    if selector is None:
        return None
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        key, op, vals = e.get("key"), e.get("operator"), ",".join(e.get("values") or [])
        if op == "In":
            parts.append(f"{key} in ({vals})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({vals})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            return None
    return ",".join(parts)


# --- inter-pod affinity -----------------------------------------------------------------

def required_pod_terms(pod: dict, kind: str = "podAffinity") -> List[dict]:
    """Required terms of podAffinity or podAntiAffinity."""
    aff = (spec(pod).get("affinity") or {}).get(kind) or {}
    return aff.get("requiredDuringSchedulingIgnoredDuringExecution") or []


def effective_selector(term: dict, pod: dict) -> Optional[dict]:
    """The term's labelSelector with matchLabelKeys / mismatchLabelKeys merged in from the pod's labels."""
    sel = term.get("labelSelector")
    if sel is None:
        return None
    exprs = list(sel.get("matchExpressions") or [])
    own = labels(pod)
    for key in term.get("matchLabelKeys") or []:
        if key in own:
            exprs.append({"key": key, "operator": "In", "values": [own[key]]})
    for key in term.get("mismatchLabelKeys") or []:
        if key in own:
            exprs.append({"key": key, "operator": "NotIn", "values": [own[key]]})
    return dict(sel, matchExpressions=exprs)


def term_namespaces(term: dict, pod: dict) -> Optional[List[str]]:
    """Namespaces the term looks in; None when a namespaceSelector makes it depend on namespace labels."""
    if term.get("namespaceSelector") is not None:
        if term["namespaceSelector"] == {}:
            return ["*"]            # every namespace
        return None
    return list(term.get("namespaces") or []) or [namespace(pod)]


def pod_matches_term(other: dict, term: dict, pod: dict) -> bool:
    nss = term_namespaces(term, pod) or []
    if "*" not in nss and namespace(other) not in nss:
        return False
    return label_selector_matches(effective_selector(term, pod), labels(other))


def term_text(term: dict, pod: dict) -> str:
    sel = selector_query(effective_selector(term, pod)) or "<selector>"
    nss = term_namespaces(term, pod)
    where = "all namespaces" if nss == ["*"] else ("namespaces chosen by namespaceSelector" if nss is None
                                                  else "namespace " + ", ".join(nss))
    return f"pods with {sel} in {where}, topologyKey {term.get('topologyKey')}"


def peer_source(ns: str, query: str) -> str:
    """The evidence source name recorded when pods matching `query` in `ns` were listed ("*": all namespaces)."""
    return f"pods[{ns}:{query}]"


def peers_listed(ev, term: dict, pod: dict) -> bool:
    """Every pod matching the term is in the evidence (complete snapshot, or the term's peers were listed)."""
    if ev.pod_nodes is None and ev.readable("pods"):
        return True
    nss, query = term_namespaces(term, pod), selector_query(effective_selector(term, pod))
    if nss is None or query is None:
        return False
    return all(ev.readable(peer_source(ns, query)) for ns in nss)


def peers(pods: Iterable[dict], term: dict, pod: dict) -> List[dict]:
    """Running or scheduled pods (other than `pod`) that match a term."""
    return [p for p in pods if spec(p).get("nodeName") and p is not pod and name(p) != name(pod)
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and pod_matches_term(p, term, pod)]
