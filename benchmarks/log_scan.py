"""Measures offline diagnoses of crashed pods whose logs hold one huge line: 1 MiB without a newline, and a few
shapes that make backtracking patterns slow (long runs of one character, repeated prefixes, a long unclosed quote).

Run: .venv/bin/python benchmarks/log_scan.py [--checkout DIR] [--runs 3]   (numbers go to docs/performance.md by hand)
--checkout measures another checkout of the project (e.g. the commit before a change) with the same inputs.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A crashed vLLM pod whose log ends in a traceback: every crash rule reads its log.
CASE = os.path.join(ROOT, "tests", "cases", "app-error", "fail-python-traceback")
MIB = 1 << 20


def shapes():
    """(name, log text): the huge line first, then the traceback the case already ends with is appended."""
    return [
        ("1 MiB single line, no spaces", "x" * MIB),
        ("1 MiB single line, words", ("token " * (MIB // 6))),
        ("1 MiB of '/' (paths)", "/" * MIB),
        ("1 MiB of 'ERROR 01-01 00:00:00 ' prefixes", "ERROR 01-01 00:00:00 " * (MIB // 21)),
        ("1 MiB of \"a' (unclosed quotes)", "a'" * (MIB // 2)),
        ("1 MiB of 'HTTPConnectionPool(host=...)'", "HTTPConnectionPool(host='a', port=1)" * (MIB // 36)),
        ("1 MiB JSON blob", '{"k": "' + "v" * (MIB - 16) + '"}'),
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", default=ROOT, help="the project checkout to measure (default: this one)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--budget", type=float, default=600.0, help="give up on a shape after this many seconds")
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.checkout))
    from tests.casebook import diagnose  # noqa: E402  (from the checkout chosen above)

    print(f"checkout: {os.path.abspath(args.checkout)}")
    print(f"{'log shape':48} {'median':>9} {'max':>9}  root cause")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in [("the case as is (no long line)", "")] + shapes():
            path, times, cause = bundle(tmp, text), [], None
            for _ in range(args.runs):
                start = time.perf_counter()
                diag = diagnose(path)
                times.append(time.perf_counter() - start)
                cause = getattr(diag, "root_cause", None) or getattr(diag, "status", None)
                if times[-1] > args.budget:
                    break
            times.sort()
            print(f"{name:48} {times[len(times) // 2] * 1000:8.0f}ms {times[-1] * 1000:8.0f}ms  {cause}", flush=True)


if __name__ == "__main__":
    main()
