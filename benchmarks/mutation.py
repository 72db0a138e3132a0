"""Mutation testing of the modules where a silent regression is a security or honesty failure (issue 23): each
group's modules are mutated one change at a time by cosmic-ray, in a copy of the tree, and the group's fast tests
must fail for every mutant. Slow (minutes per group), so not in CI's path; run it like a benchmark and record the
score and the survivors in docs/testing.md.

    .venv/bin/pip install cosmic-ray        # not a project dependency: a tool for this script only
    .venv/bin/python benchmarks/mutation.py [GROUP ...] [--list] [--keep DIR]

Each mutant runs the group's test command in the copy with PYTHONPATH pointing at the copy, so the tests that run
the installed command as a subprocess see the mutant too."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTEST = f"{sys.executable} -m pytest -x -q -p no:cacheprovider"

# (group, modules to mutate, the fast tests that pin them). Declared here, in one visible list. A module written
# `path::f,g` is mutated only inside those definitions (functions, methods, properties).
GROUPS = [
    ("exit-codes", ["kubectl_gpudoctor/report.py", "kubectl_gpudoctor/exitcodes.py"],
     ["tests/test_exit_codes.py", "tests/test_report_document.py"]),
    ("root-cause", ["kubectl_gpudoctor/verdict.py::root_cause,cause_id,order_findings,_drop_explained_fallbacks"],
     ["tests/test_exit_codes.py", "tests/test_verdict_choice.py"]),
    ("sanitize", ["kubectl_gpudoctor/safety/sanitize.py"],
     ["tests/test_inert_codepoints.py", "tests/test_hostile_text.py", "tests/test_render.py"]),
    ("redact", ["kubectl_gpudoctor/safety/redact.py"],
     ["tests/test_redaction.py"]),
    ("http11", ["kubectl_gpudoctor/collect/http11.py"],
     ["tests/test_http11.py"]),
    ("transport", ["kubectl_gpudoctor/collect/transport.py"],
     ["tests/test_http11.py", "tests/test_kubeconfig.py"]),
    ("kubeconfig", ["kubectl_gpudoctor/collect/kubeconfig.py"],
     ["tests/test_kubeconfig.py"]),
]


def _copy_tree(dest: str) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for rel in files:
        if rel.startswith(("tests/realworld/", "tests/scenarios/", "examples/")) or not os.path.isfile(os.path.join(ROOT, rel)):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)) or dest, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), os.path.join(dest, rel))


def _config(path: str, module: str, tests: list) -> None:
    existing = " ".join(t for t in tests if os.path.exists(os.path.join(ROOT, t)))
    with open(path, "w") as f:
        f.write(f'[cosmic-ray]\nmodule-path = "{module}"\ntimeout = 120.0\nexcluded-modules = []\n'
                f'test-command = "{PYTEST} {existing}"\n\n[cosmic-ray.distributor]\nname = "local"\n')


def _only(session: str, definitions: set) -> None:
    """Keep the session's mutants inside the named definitions (cosmic-ray records each one's enclosing def)."""
    import sqlite3
    with sqlite3.connect(session) as db:
        gone = [row[0] for row in db.execute("SELECT job_id, definition_name FROM mutation_specs")
                if row[1] not in definitions]
        db.executemany("DELETE FROM mutation_specs WHERE job_id = ?", [(j,) for j in gone])
        db.executemany("DELETE FROM work_items WHERE job_id = ?", [(j,) for j in gone])


def _results(session: str) -> tuple:
    """(killed, survived, incompetent, [survivor descriptions]) from a cosmic-ray session database."""
    dump = subprocess.run(["cosmic-ray", "dump", session], capture_output=True, text=True, check=True).stdout
    killed = survived = incompetent = 0
    survivors = []
    for line in dump.splitlines():
        if not line.strip():
            continue
        work, result = json.loads(line)
        if result is None:
            continue
        outcome = result.get("test_outcome")
        if result.get("worker_outcome") != "normal":
            incompetent += 1
        elif outcome == "killed":
            killed += 1
        elif outcome == "survived":
            survived += 1
            for m in work["mutations"]:
                survivors.append(f'{m["module_path"]}:{m["start_pos"][0]} {m["operator_name"]}'
                                 f'#{m["occurrence"]}')
        else:
            incompetent += 1
    return killed, survived, incompetent, survivors


def run_group(name: str, modules: list, tests: list, keep: str | None) -> dict:
    work = keep and os.path.join(keep, name) or tempfile.mkdtemp(prefix=f"mutation-{name}-")
    os.makedirs(work, exist_ok=True)
    tree = os.path.join(work, "tree")
    shutil.rmtree(tree, ignore_errors=True)
    _copy_tree(tree)
    env = dict(os.environ, PYTHONPATH=tree, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    totals = {"group": name, "killed": 0, "survived": 0, "incompetent": 0, "survivors": [], "seconds": 0.0}
    start = time.monotonic()
    for spec in modules:
        module, _, only = spec.partition("::")
        cfg, session = os.path.join(work, "cr.toml"), os.path.join(work, f"{os.path.basename(module)}.sqlite")
        _config(cfg, module, tests)
        subprocess.run(["cosmic-ray", "init", cfg, session], cwd=tree, env=env, check=True, capture_output=True)
        if only:
            _only(session, set(only.split(",")))
        subprocess.run(["cosmic-ray", "exec", cfg, session], cwd=tree, env=env, check=True, capture_output=True)
        k, s, i, surv = _results(session)
        totals["killed"] += k
        totals["survived"] += s
        totals["incompetent"] += i
        totals["survivors"] += surv
    totals["seconds"] = round(time.monotonic() - start, 1)
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return totals


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="*", help="groups to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the groups and exit")
    parser.add_argument("--keep", metavar="DIR", help="keep each group's copy and session database under DIR")
    args = parser.parse_args(argv)
    if shutil.which("cosmic-ray") is None:
        print("cosmic-ray is not installed: .venv/bin/pip install cosmic-ray", file=sys.stderr)
        return 2
    chosen = [g for g in GROUPS if not args.groups or g[0] in args.groups]
    if args.list:
        for name, modules, tests in GROUPS:
            print(f"{name:12} {' '.join(modules)}  <-  {' '.join(tests)}")
        return 0
    print("| group | killed | survived | score | incompetent | time |\n|---|---|---|---|---|---|")
    report = []
    for name, modules, tests in chosen:
        r = run_group(name, modules, tests, args.keep)
        done = r["killed"] + r["survived"]
        score = f"{100 * r['killed'] / done:.0f} %" if done else "-"
        print(f"| {name} | {r['killed']} | {r['survived']} | {score} | {r['incompetent']} | {r['seconds']:.0f} s |",
              flush=True)
        report.append(r)
    for r in report:
        for s in r["survivors"]:
            print(f"survived [{r['group']}] {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
