"""Measures `scan --from` over a `kubectl get pods -A -o yaml` of many failing GPU pods (the 25-pod cap, linear load).

Run: .venv/bin/python benchmarks/offline_scan.py [--pods 2000] [--runs 3]   (numbers go to docs/performance.md by hand)
"""
import argparse
import os
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.startup import timed  # noqa: E402
from tests.live import clean_env, plugin_path  # noqa: E402

OOM = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")


def many_pods(count: int, path: str) -> None:
    """The case's crashing pod `count` times under other names, with the case's node, as one v1 List."""
    docs = [d for d in yaml.safe_load_all(open(os.path.join(OOM, "objects.yaml"))) if d]
    pod = next(d for d in docs if d["kind"] == "Pod")
    items = [d for d in docs if d["kind"] not in ("Pod", "Event")]
    for i in range(count):
        p = yaml.safe_load(yaml.safe_dump(pod))
        p["metadata"]["name"], p["metadata"]["uid"] = f"inference-{i:05d}", f"00000000-0000-4000-8000-{i:012d}"
        items.append(p)
    with open(path, "w") as f:
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'failing GPU pods':>16} {'file':>8} {'median':>9} {'min':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.pods:
            path = os.path.join(tmp, f"pods-{count}.yaml")
            many_pods(count, path)
            med, low = timed([plugin_path(), "scan", "-A", "--from", path, "-o", "json"], args.runs, clean_env())
            print(f"{count:>16} {os.path.getsize(path) // 1024:>6}KB {med:8.1f}s {low:8.1f}s")


if __name__ == "__main__":
    main()
