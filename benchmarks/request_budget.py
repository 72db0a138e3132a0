"""Counts the GETs and sequential round trips of a live pod diagnosis for every servable rule case, by phase.

    python benchmarks/request_budget.py [--latency 0.05] [--worst 10]

Each case is served by the suite's API server with a small added latency, so that the requests of one parallel
round all arrive before any is answered and `depth` (the round trip a request belongs to) is exact.
"""
import argparse
import os
import sys
import tempfile
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.apiserver import FakeApiServer, load_case  # noqa: E402
from tests.casebook import all_cases, expectations  # noqa: E402


def servable_pod_cases():
    import yaml
    for rid, kind, path in all_cases():
        meta_path = os.path.join(path, "bundle.yaml")
        meta = yaml.safe_load(open(meta_path)) if os.path.exists(meta_path) else {}
        if (meta.get("target") or {}).get("kind", "Pod") != "Pod" or meta.get("gaps") or "sources" in meta:
            continue
        if expectations(path).get("live") is False:
            continue
        yield rid, kind, path, meta["target"]


def measure(path, target, latency):
    """(GETs, sequential round trips) of one live pod diagnosis of the case."""
    from kubectl_gpudoctor.collect.kubeconfig import ConnOptions
    from kubectl_gpudoctor.collect.pod import collect_pod
    objects, logs = load_case(path)
    with FakeApiServer(objects, logs, latency=latency) as srv, tempfile.TemporaryDirectory() as tmp:
        kc = srv.write_kubeconfig(os.path.join(tmp, "kc"), namespace=target["namespace"])
        collect_pod(ConnOptions(kubeconfig=kc), target["name"])
        return len(srv.requests), max(r.depth for r in srv.requests)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--worst", type=int, default=10, help="list the N cases with the most GETs")
    args = parser.parse_args()
    from kubectl_gpudoctor.rules import RULES
    by_phase, rows = defaultdict(list), []
    for rid, kind, path, target in servable_pod_cases():
        gets, depth = measure(path, target, args.latency)
        phase = RULES[rid].phase if rid in RULES else "?"
        by_phase[phase].append((gets, depth))
        rows.append((gets, depth, os.path.relpath(path, os.path.join(ROOT, "tests", "cases"))))
    print(f"{'phase':12} {'cases':>5} {'max GETs':>8} {'median GETs':>11} {'max round trips':>15}")
    for phase, vals in sorted(by_phase.items()):
        gets = sorted(g for g, _ in vals)
        print(f"{phase:12} {len(vals):5d} {gets[-1]:8d} {gets[len(gets) // 2]:11d} {max(d for _, d in vals):15d}")
    print(f"\nworst {args.worst} by GETs:")
    for gets, depth, name in sorted(rows, reverse=True)[:args.worst]:
        print(f"  {gets:3d} GETs {depth} round trips  {name}")


if __name__ == "__main__":
    main()
