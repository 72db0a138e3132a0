"""Finds the rule cases (tests/cases/<rule-id>/{fail,pass}-<scenario>/) and diagnoses one offline."""
import os

import yaml

from kubectl_gpudoctor.offline import load as offline
from kubectl_gpudoctor import verdict
from kubectl_gpudoctor.kube.workloads import WORKLOAD_KINDS

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")


def all_cases():
    """(rule id, "fail"|"pass", path) for every case directory."""
    out = []
    for rule_id in sorted(os.listdir(CASES)):
        rule_dir = os.path.join(CASES, rule_id)
        if not os.path.isdir(rule_dir):
            continue
        for scenario in sorted(os.listdir(rule_dir)):
            kind = scenario.split("-", 1)[0]
            if kind in ("fail", "pass") and os.path.isdir(os.path.join(rule_dir, scenario)):
                out.append((rule_id, kind, os.path.join(rule_dir, scenario)))
    return out


def expectations(path):
    exp = os.path.join(path, "expect.yaml")
    if not os.path.exists(exp):
        return {}
    with open(exp) as f:
        return yaml.safe_load(f) or {}


def target_kind(path):
    meta = os.path.join(path, "bundle.yaml")
    if os.path.exists(meta):
        with open(meta) as f:
            return ((yaml.safe_load(f) or {}).get("target") or {}).get("kind", "Pod")
    return "Pod"


def diagnose(path, ignore=()):
    kind = target_kind(path)
    if kind in WORKLOAD_KINDS:
        from kubectl_gpudoctor.runner import Options, workload_diagnosis
        return workload_diagnosis(Options(source=path, ignore=tuple(ignore)), kind.lower(), None)
    ev = offline.load(path, kind)
    return verdict.diagnose_pod(ev, ignore) if kind == "Pod" else verdict.diagnose_node(ev, ignore)
