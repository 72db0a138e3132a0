"""`kubectl gpudoctor nodes` on the 2,000-node, 40,000-pod stand-in (tests/test_node_scale.py) against what a person
would run instead: `kubectl get nodes -o json` + `kubectl get pods -A -o json`, timed back to back in one run.

    python benchmarks/fleet.py [--runs 5] [--latency 0]

Prints the medians, their ratio (target: at most 1.5) and each command's peak RSS (GNU time).
"""
import argparse
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.versus_kubectl import peak_rss, run  # noqa: E402
from tests.apiserver import FakeApiServer  # noqa: E402
from tests.live import clean_env, plugin_path  # noqa: E402
from tests.test_node_scale import stand_in_cluster  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    args = ap.parse_args()
    with FakeApiServer(stand_in_cluster(), latency=args.latency) as srv, tempfile.TemporaryDirectory() as tmp:
        kc = srv.write_kubeconfig(os.path.join(tmp, "kubeconfig"))
        env = clean_env(KUBECONFIG=kc)
        plugin = [plugin_path(), "nodes", "-o", "json"]
        kubectl = [["kubectl", "get", "nodes", "-o", "json"], ["kubectl", "get", "pods", "-A", "-o", "json"]]
        mine, theirs = [], []
        for i in range(args.runs):
            order = (0, 1) if i % 2 == 0 else (1, 0)
            for which in order:
                if which == 0:
                    t, _, code = run(plugin, env)
                    assert code in (0, 1), f"nodes exited {code}"
                    mine.append(t)
                else:
                    theirs.append(sum(run(c, env)[0] for c in kubectl))
        m, k = statistics.median(mine), statistics.median(theirs)
        print(f"nodes -o json: {m:.2f}s   kubectl get nodes + get pods -A: {k:.2f}s   ratio {m / k:.2f} "
              f"(runs {args.runs}, latency {args.latency * 1000:.0f} ms)")
        rss = peak_rss(plugin, env), max(peak_rss(c, env) or 0 for c in kubectl)
        if rss[0]:
            print(f"peak RSS: nodes {rss[0]:.0f} MB, kubectl (larger of the two) {rss[1]:.0f} MB")


if __name__ == "__main__":
    main()
