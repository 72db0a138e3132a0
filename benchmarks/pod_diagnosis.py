"""Measures a pod diagnosis end to end: the installed plugin against the suite's API server, plus start-up paths.

Run: .venv/bin/python benchmarks/pod_diagnosis.py [--runs 15]   (numbers go to docs/performance.md by hand)
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.startup import timed  # noqa: E402
from tests.apiserver import FakeApiServer, load_case  # noqa: E402
from tests.live import clean_env, plugin_path  # noqa: E402

CASE = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
OOM = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    plugin, env = plugin_path(), clean_env()
    rows = [("--version", *timed([plugin, "--version"], args.runs, env)),
            ("--help", *timed([plugin, "--help"], args.runs, env)),
            ("rules", *timed([plugin, "rules"], args.runs, env)),
            ("offline diagnosis (--from)", *timed([plugin, "--from", OOM], args.runs, env))]
    objects, logs = load_case(OOM)
    with FakeApiServer(objects, logs) as srv, tempfile.TemporaryDirectory() as tmp:
        kc = srv.write_kubeconfig(os.path.join(tmp, "kc"), namespace="serving")
        cmd = [plugin, "inference-7d9f8b6c5-x2x9q", "--kubeconfig", kc, "-o", "json"]
        srv.reset_requests()
        live = timed(cmd, args.runs, env)
        per_run = len(srv.requests) / (args.runs + 1)   # timed() runs once more to warm the cache
        rows.append((f"live pod diagnosis (TLS, {per_run:.0f} GETs)", *live))
    importtime = subprocess.run([sys.executable, "-X", "importtime", "-c", "import kubernetes.client.api_client, "
                                 "kubernetes.config.kube_config"], capture_output=True, text=True).stderr
    total_us = int(importtime.strip().splitlines()[-1].split("|")[1])
    print(f"{'command':40} {'median':>9} {'min':>9}")
    for name, med, low in rows:
        print(f"{name:40} {med * 1000:8.0f}ms {low * 1000:8.0f}ms")
    print(f"requests per live diagnosis: {per_run:.0f}")
    print(f"import of kubernetes client + kubeconfig loader: {total_us / 1000:.0f}ms (cumulative, -X importtime)")


if __name__ == "__main__":
    main()
