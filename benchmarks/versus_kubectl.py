"""The plugin paired against the real `kubectl` in one run, against the test suite's API server at 0, 20 and 100 ms
per request; prints ratios of medians (plugin / kubectl) and, with --write, puts them in docs/performance.md.

    python benchmarks/versus_kubectl.py [--runs 7] [--latency 0 20 100] [--only pod,pending,node,scan,startup]
                                        [--scan-runs N] [--frozen] [--editable] [--write]

Each run of a scenario times the plugin and its kubectl baseline back to back (in alternating order), so a busy
machine slows both alike; the ratio of the medians is the number to watch, not the absolute times. The plugin timed is a regular install of
this tree with compiled bytecode (benchmarks/installed.py), as `pip install` leaves it, unless --editable.
"""
import argparse
import gc
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import installed  # noqa: E402
from tests.apiserver import FakeApiServer, load_case  # noqa: E402
from tests.live import clean_env, plugin_path as editable_plugin  # noqa: E402

DOC = os.path.join(ROOT, "docs", "performance.md")
BEGIN, END = "<!-- versus-kubectl:begin (benchmarks/versus_kubectl.py writes this section) -->", \
    "<!-- versus-kubectl:end -->"
CRASH = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")   # CrashLoopBackOff, OOMKilled
CRASH_POD, CRASH_NS, CRASH_NODE = "inference-7d9f8b6c5-x2x9q", "serving", "gpu-node-01"
SCAN_PODS = 20000
PLUGIN = []   # the command timed: a regular install of this tree (main() fills it in)


def plugin_path():
    return PLUGIN[0]


def run(cmd, env):
    """(wall seconds, peak RSS in MB, exit code) of one command, output discarded."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t, usage.ru_maxrss / 1024, proc.returncode


def peak_rss(cmd, env):
    """The command's own peak RSS in MB, read by GNU time (None without it). Not from this process's wait4: Linux
    keeps a process's peak RSS across exec, so a child of this process (which holds the stand-in's 40,000 pods)
    reports at least this process's size; `time` is a fresh small process, and so is the child it starts."""
    if not os.path.exists("/usr/bin/time"):
        return None
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name, *cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env)
        return int(out.read().split()[-1]) / 1024


def paired(plugin_cmd, baselines, runs, env, srv=None):
    """Medians of the plugin and of each baseline (a list of commands run one after the other, as a user would),
    interleaved run by run; plus the plugin's GETs per run and its peak RSS."""
    for cmds in [[plugin_cmd]] + list(baselines.values()):   # warm caches (page cache, kubectl discovery cache)
        for c in cmds:
            secs, _, code = run(c, env)
            if code not in (0, 1):
                sys.exit(f"{' '.join(c)} exited {code}")
    samples = {"plugin": [], **{k: [] for k in baselines}}
    gets, rss = [], []
    for i in range(runs):
        order = [("plugin", [plugin_cmd])] + list(baselines.items())
        for name, cmds in (order if i % 2 == 0 else order[::-1]):
            if srv is not None and name == "plugin":
                srv.reset_requests()
            total = 0.0
            for c in cmds:
                secs, peak, _ = run(c, env)
                total += secs
                if name == "plugin":
                    rss.append(peak)
            if srv is not None and name == "plugin":
                gets.append(len(srv.requests))
            samples[name].append(total)
    med = {k: statistics.median(v) for k, v in samples.items()}
    return med, (max(gets) if gets else None), max(rss)


def frozen_heap():
    """The stand-in server runs in this process: with tens of thousands of objects held, every few pod lists
    CPython's full garbage collection walks them all (0.2-0.3 s) and stalls whichever client is being answered,
    in a pattern the alternating order can pin on one side. A real API server has no such pause; freezing what is
    held now keeps it out of both sides' times (each list's own garbage is still collected)."""
    gc.collect()
    gc.freeze()


def kubeconfig(srv, tmp, namespace):
    return srv.write_kubeconfig(os.path.join(tmp, f"kc-{namespace}"), namespace=namespace)


def pod_scenario(runs, latencies, env, kubectl):
    objects, logs = load_case(CRASH)
    rows = []
    with FakeApiServer(objects, logs) as srv, tempfile.TemporaryDirectory() as tmp:
        kc = kubeconfig(srv, tmp, CRASH_NS)
        k = [kubectl, "--kubeconfig", kc]
        recipe = [k + ["describe", "pod", CRASH_POD], k + ["get", "pod", CRASH_POD, "-o", "yaml"],
                  k + ["logs", CRASH_POD, "--previous", "--tail=80"], k + ["get", "node", CRASH_NODE, "-o", "yaml"],
                  k + ["get", "runtimeclass"]]
        for ms in latencies:
            srv.latency = ms / 1000
            med, gets, _ = paired([plugin_path(), CRASH_POD, "--kubeconfig", kc, "-o", "json"],
                                  {"describe": [recipe[0]], "recipe": recipe}, runs, env, srv)
            rows.append(("pod verdict (CrashLoopBackOff) / `kubectl describe pod`", ms, med["plugin"], med["describe"],
                         gets))
            rows.append(("pod verdict (CrashLoopBackOff) / the five-command recipe", ms, med["plugin"], med["recipe"],
                         gets))
    return rows


def big_cluster_scenarios(runs, latencies, env, kubectl, only):
    from tests.bigcluster import PENDING, big_cluster
    from tests.test_node_scale import FLAPPING
    rows = []
    with FakeApiServer(big_cluster()) as srv, tempfile.TemporaryDirectory() as tmp:
        frozen_heap()
        kc = kubeconfig(srv, tmp, PENDING[0])
        k = [kubectl, "--kubeconfig", kc]
        for ms in latencies:
            srv.latency = ms / 1000
            if "pending" in only:
                med, gets, _ = paired([plugin_path(), PENDING[1], "--kubeconfig", kc, "-o", "json"],
                                      {"describe": [k + ["describe", "pod", PENDING[1]]]}, runs, env, srv)
                rows.append(("Pending 8-GPU pod, 2,000 nodes / 40,000 pods / `kubectl describe pod`", ms,
                             med["plugin"], med["describe"], gets))
            if "node" in only:
                base = [k + ["get", "node", FLAPPING, "-o", "json"],
                        k + ["get", "pods", "-A", "--field-selector", f"spec.nodeName={FLAPPING}", "-o", "json"]]
                med, gets, _ = paired([plugin_path(), "node", FLAPPING, "--kubeconfig", kc, "-o", "json"],
                                      {"get": base}, runs, env, srv)
                rows.append(("node view, same cluster / `get node -o json` + `get pods -A --field-selector "
                             "spec.nodeName=…`", ms, med["plugin"], med["get"], gets))
    return rows


def scan_scenario(runs, latencies, env, kubectl):
    from tests.bigcluster import big_cluster
    rows, rss_note = [], None
    with FakeApiServer(big_cluster(pods=SCAN_PODS)) as srv, tempfile.TemporaryDirectory() as tmp:
        frozen_heap()
        kc = kubeconfig(srv, tmp, "default")
        for ms in latencies:
            srv.latency = ms / 1000
            cmd = [plugin_path(), "scan", "-A", "--kubeconfig", kc, "-o", "json"]
            med, gets, _ = paired(cmd, {"get": [[kubectl, "--kubeconfig", kc, "get", "pods", "-A", "-o", "json"]]},
                                  runs, env, srv)
            rows.append((f"scan -A, {SCAN_PODS:,} pods / `kubectl get pods -A -o json`", ms, med["plugin"], med["get"],
                         gets))
            rss = peak_rss(cmd, env)
            rss_note = max(rss_note or 0, rss or 0) or None
    return rows, rss_note


def startup_scenario(runs, env, kubectl):
    rows = []
    base = {"kubectl": [[kubectl, "version", "--client"]]}
    for args in (["--help"], ["--version"]):
        med, _, _ = paired([plugin_path(), *args], base, runs, env)
        rows.append((f"`{args[0]}` / `kubectl version --client`", None, med["plugin"], med["kubectl"], None))
    return rows


def frozen_rows(runs):
    from benchmarks import startup
    result = startup.measure(runs, os.environ.get("GPUDOCTOR_DIST"))
    return [(f"frozen binary / pip install: {r['command']}", None, r["frozen_median"], r["pip_median"], None)
            for r in result["rows"]]


def table(rows, runs, rss, latencies, scan_runs=None):
    lines = [f"Measured by `python benchmarks/versus_kubectl.py --runs {runs}` ({platform.system()} "
             f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
             f"{kubectl_version()}); the suite's API server on loopback with {', '.join(str(m) for m in latencies)} ms "
             f"added to every answer; median of {runs} paired runs each. Ratio = plugin / baseline (lower is "
             "better); GETs = the plugin's requests per run." + (f" The scan rows: median of {scan_runs} runs."
                                                                  if scan_runs and scan_runs != runs else ""), "",
             "| comparison | latency | ratio | plugin GETs | plugin median | baseline median |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, ms, plugin, base, gets in rows:
        lines.append(f"| {name} | {'' if ms is None else f'{ms} ms'} | {plugin / base:.2f}x | {gets or ''} | "
                     f"{plugin * 1000:.0f} ms | {base * 1000:.0f} ms |")
    if rss:
        lines += ["", f"Peak RSS of `scan -A` at {SCAN_PODS:,} pods: {rss:.0f} MB."]
    return "\n".join(lines)


def kubectl_version():
    out = subprocess.run(["kubectl", "version", "--client"], capture_output=True, text=True).stdout
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Client Version")),
                "kubectl")


def write_doc(section):
    block = f"{BEGIN}\n## The plugin against kubectl\n\n{section}\n{END}\n"
    text = open(DOC, encoding="utf-8").read() if os.path.exists(DOC) else "# Performance\n\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + "\n" + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(DOC, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scan-runs", type=int, help="runs for the 20,000-pod scan (default: --runs); each takes ~20 s")
    parser.add_argument("--latency", type=int, nargs="+", default=[0, 20, 100], help="milliseconds per request")
    parser.add_argument("--only", default="pod,pending,node,scan,startup")
    parser.add_argument("--frozen", action="store_true", help="also build the krew binary and time it (slow)")
    parser.add_argument("--write", action="store_true", help="write the table into docs/performance.md")
    parser.add_argument("--editable", action="store_true",
                        help="time the development install instead of a regular, bytecode-compiled install")
    args = parser.parse_args()
    PLUGIN.append(editable_plugin() if args.editable else installed.install())
    only = set(args.only.split(","))
    kubectl = os.environ.get("KUBECTL", "kubectl")
    cache = tempfile.mkdtemp(prefix="gpudoctor-bench-kubecache-")
    env = clean_env(KUBECACHEDIR=cache, HOME=cache)   # kubectl's discovery cache: warm after the first run
    rows, rss = [], None
    if "startup" in only:
        rows += startup_scenario(args.runs, env, kubectl)
    if "pod" in only:
        rows += pod_scenario(args.runs, args.latency, env, kubectl)
    if only & {"pending", "node"}:
        rows += big_cluster_scenarios(args.runs, args.latency, env, kubectl, only)
    if "scan" in only:
        scan_rows, rss = scan_scenario(args.scan_runs or args.runs, args.latency, env, kubectl)
        rows += scan_rows
    if args.frozen:
        rows += frozen_rows(args.runs)
    section = table(rows, args.runs, rss, args.latency, args.scan_runs if "scan" in only else None)
    print(section)
    if args.write:
        write_doc(section)


if __name__ == "__main__":
    main()
