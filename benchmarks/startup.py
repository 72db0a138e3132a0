"""Start-up of the frozen (krew) binary against the pip install: `--version` and a full offline diagnosis.

    python benchmarks/startup.py [--runs 20] [--dist DIR] [--no-write]

Builds the archive with packaging/build.sh unless --dist names a directory holding one built from the current
sources (build-info.json), extracts it as krew would, times both installs, prints a table and writes it into
docs/performance.md between the `startup` markers (the rest of that file is left alone).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "packaging"))

import pack  # noqa: E402  packaging/pack.py
from benchmarks import installed  # noqa: E402
from tests import krewsim  # noqa: E402
from tests.live import clean_env  # noqa: E402

DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- startup:begin (benchmarks/startup.py writes this section) -->", "<!-- startup:end -->"
FACTOR = 1.5   # issue 11: the frozen binary's start-up may cost at most this many times the pip install's


def frozen_dir(dist):
    """(path to the frozen executable, build seconds or None) — reusing `dist` only if it is current."""
    os_, arch = pack.host_platform()
    name = pack.archive_name(pack.version(), os_, arch)
    seconds = None
    if not (dist and krewsim._fresh(Path(dist), name, pack.source_digest())):
        dist = tempfile.mkdtemp(prefix="gpudoctor-bench-dist-")
        t = time.perf_counter()
        subprocess.run(["bash", str(ROOT / "packaging" / "build.sh"), "--out", dist], check=True,
                       env=dict(os.environ, PYTHON=sys.executable), stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - t
    dest = Path(tempfile.mkdtemp(prefix="gpudoctor-bench-x-"))
    krewsim.extract(Path(dist) / name, dest)
    return dest / pack.layout(os_)["bin"], seconds, (Path(dist) / name).stat().st_size


def timed(cmd, runs, env):
    subprocess.run(cmd, capture_output=True, env=env)   # warm the page cache once
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples), min(samples)


def measure(runs, dist):
    exe, build_seconds, size = frozen_dir(dist)
    bundle = str(pack.example_bundles()[0])
    env, pip = clean_env(), installed.install()   # a regular, bytecode-compiled install, as pip leaves it
    cases = [("--version", ["--version"]), ("offline diagnosis (--from example)", ["--from", bundle])]
    rows = []
    for label, args in cases:
        f_med, f_min = timed([str(exe), *args], runs, env)
        p_med, p_min = timed([pip, *args], runs, env)
        rows.append({"command": label, "frozen_median": f_med, "frozen_min": f_min, "pip_median": p_med,
                     "pip_min": p_min, "ratio": f_med / p_med})
    return {"rows": rows, "build_seconds": build_seconds, "archive_bytes": size, "runs": runs,
            "bundle": os.path.relpath(bundle, ROOT), "machine": f"{platform.system()} {platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}"}


def table(result) -> str:
    lines = [f"Measured by `python benchmarks/startup.py` ({result['machine']}; median and min of "
             f"{result['runs']} runs, wall clock, warm cache). Frozen = the PyInstaller onedir binary from the "
             f"krew archive; pip = the `kubectl-gpudoctor` console script of a regular pip install (bytecode compiled, "
             f"benchmarks/installed.py). "
             f"Offline diagnosis: `--from {result['bundle']}`. Absolute times move with the machine's load; the "
             f"ratio is the number to watch.", "",
             "| command | frozen median | frozen min | pip median | pip min | frozen / pip |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['command']} | {r['frozen_median'] * 1000:.0f} ms | {r['frozen_min'] * 1000:.0f} ms | "
                     f"{r['pip_median'] * 1000:.0f} ms | {r['pip_min'] * 1000:.0f} ms | {r['ratio']:.2f}x |")
    lines.append("")
    extra = f"Archive size: {result['archive_bytes'] / 1e6:.1f} MB"
    if result["build_seconds"]:
        extra += f"; `packaging/build.sh` took {result['build_seconds']:.0f} s"
    lines.append(extra + f". Budget: frozen start-up at most {FACTOR:g}x the pip install's (this script exits "
                         "non-zero above it; a timing belongs in a benchmark, not in the test suite).")
    return "\n".join(lines)


def write_doc(section: str) -> None:
    block = f"{BEGIN}\n## Start-up: krew binary vs pip install\n\n{section}\n{END}\n"
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Performance\n\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + "\n" + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    DOC.write_text(text, encoding="utf-8")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--dist", help="directory where packaging/build.sh wrote the archive (reused if current)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md alone")
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    result = measure(args.runs, args.dist)
    section = table(result)
    print(json.dumps(result, indent=2) if args.json else section)
    if not args.no_write:
        write_doc(section)
    worst = max(r["ratio"] for r in result["rows"])
    if worst > FACTOR:
        sys.exit(f"frozen start-up is {worst:.2f}x the pip install's (budget {FACTOR:g}x)")


if __name__ == "__main__":
    main()
