"""Measures offline diagnoses of crashed pods whose logs hold one huge line: 1 MiB without a newline, and a few
shapes that make backtracking patterns slow (long runs of one character, repeated prefixes, a long unclosed quote).

Run: .venv/bin/python benchmarks/log_scan.py [--checkout DIR] [--size BYTES] [--runs 3] [--budget S]
(numbers go to docs/performance.md by hand). --checkout measures another checkout of the project (e.g. the commit
before a change) with the same inputs; each diagnosis runs in its own process and is stopped after --budget seconds.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A crashed vLLM pod whose log ends in a traceback: every crash rule reads its log.
CASE = os.path.join(ROOT, "tests", "cases", "app-error", "fail-python-traceback")
# One diagnosis in a fresh process: prints its wall time and root cause.
CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.casebook import diagnose
start = time.perf_counter()
diag = diagnose(sys.argv[2])
print(time.perf_counter() - start, diag.root_cause or diag.status)
"""


def shapes(size: int):
    """(name, one line of about `size` characters) placed before the traceback the case already ends with."""
    unit = lambda s: s * max(1, size // len(s))   # noqa: E731
    return [
        ("single line, no spaces", "x" * size),
        ("single line, words", unit("token ")),
        ("'/' (a path-like run)", "/" * size),
        ("'ERROR 01-01 00:00:00 ' prefixes", unit("ERROR 01-01 00:00:00 ")),
        ("\"a'\" (unclosed quotes)", unit("a'")),
        ("'HTTPConnectionPool(host=...)'", unit("HTTPConnectionPool(host='a', port=1)")),
        ("JSON blob", '{"k": "' + "v" * max(0, size - 10) + '"}'),
    ]


def bundle(tmp: str, text: str) -> str:
    """A copy of CASE whose failed container's logs start with `text` as one line."""
    dest = os.path.join(tmp, "case")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(CASE, dest)
    for dirpath, _, files in os.walk(os.path.join(dest, "logs")):
        for f in files:
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8") as fh:
                tail = fh.read()
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + "\n" + tail)
    return dest


def once(checkout: str, path: str, budget: float):
    """(seconds, root cause) of one diagnosis, or (None, None) when it ran past the budget."""
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, checkout, path], capture_output=True, text=True,
                             timeout=budget, check=True).stdout.split()
    except subprocess.TimeoutExpired:
        return None, None
    return float(out[0]), out[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", default=ROOT, help="the project checkout to measure (default: this one)")
    parser.add_argument("--size", type=int, default=1 << 20, help="length of the long line (default 1 MiB)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--budget", type=float, default=120.0, help="stop a diagnosis after this many seconds")
    args = parser.parse_args()
    checkout = os.path.abspath(args.checkout)
    print(f"checkout: {checkout}; long line: {args.size} characters; diagnosis time without process start-up")
    print(f"{'log shape':40} {'median':>10} {'max':>10}  root cause")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in [("the case as is (no long line)", "")] + shapes(args.size):
            path, times, cause = bundle(tmp, text), [], None
            for _ in range(args.runs):
                took, cause = once(checkout, path, args.budget)
                if took is None:
                    break
                times.append(took)
            if len(times) < args.runs:
                print(f"{name:40} {'> ' + str(int(args.budget)) + ' s':>10} {'':>10}  (stopped)", flush=True)
                continue
            times.sort()
            print(f"{name:40} {times[len(times) // 2] * 1000:8.0f}ms {times[-1] * 1000:8.0f}ms  {cause}", flush=True)


if __name__ == "__main__":
    main()
