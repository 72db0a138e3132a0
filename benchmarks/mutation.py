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
import resource
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
    # redact: the definitions that decide what is masked and kept (826 mutants in all, 286 of them at module level,
    # nearly all `+` between the pattern strings, which fail at import; a full run takes about an hour on 2 cores).
    ("redact", ["kubectl_gpudoctor/safety/redact.py::mask,_mask,replace,_spans,_mixed,_random_looking,masked,"
                "named_settings,secret_metadata,for_bundle,_hide_named_values,_hide_in_container,_masked_tree"],
     ["tests/test_redact_mutants.py", "tests/test_secret_corpus.py", "tests/test_redaction.py"]),
    ("http11", ["kubectl_gpudoctor/collect/http11.py"],
     ["tests/test_http11_mutants.py", "tests/test_http11.py"]),
    # transport: where a GET goes and with which credentials, refused servers, mask_url, the size bounds (350
    # mutants in all; get's deadline and retry arithmetic, open_spares, close and _describe are left out)
    ("transport", ["kubectl_gpudoctor/collect/transport.py::basic_auth,mask_url,endpoint,tls_context,_proxy_context,"
                   "__init__,_library,_connect,_decoded,_retry_after"],
     ["tests/test_transport_mutants.py", "tests/test_transport_security.py", "tests/test_kubeconfig_mutants.py",
      "tests/test_transport_paging.py",
      "tests/test_transport_proxy.py", "tests/test_transport_limits.py", "tests/test_http11.py"]),
    # kubeconfig: precedence, the context, cluster and user chosen, the flags over them (insecure, CA, server),
    # which credentials go where, header values (264 mutants in all; bearer_case, _in_cluster, _read's wording
    # and the options' defaults are left out). The in-process tests first: a mutant they kill costs 3 s, not 15.
    ("kubeconfig", ["kubectl_gpudoctor/collect/kubeconfig.py::kubeconfig_paths,connect,_merged,_from_files,_entries,"
                    "_user_flags,_resolve_paths,_override_cluster,_override_user,_credentials,_check_header_values,"
                    "impersonation,_header_key_escape,_bearer,_file_or_data"],
     ["tests/test_kubeconfig_mutants.py", "tests/test_kubeconfig.py"]),
]


def _copy_tree(dest: str) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for rel in files:
        # the realworld cases (15 MB) are read by no group's tests; the scenarios are (test_redaction and
        # test_kubeconfig serve healthy-vllm): without them every mutant reaching those tests was "killed"
        if rel.startswith("tests/realworld/") or not os.path.isfile(os.path.join(ROOT, rel)):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)) or dest, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), os.path.join(dest, rel))


def _config(path: str, module: str, tests: list) -> None:
    existing = " ".join(t for t in tests if os.path.exists(os.path.join(ROOT, t)))
    with open(path, "w") as f:
        f.write(f'[cosmic-ray]\nmodule-path = "{module}"\ntimeout = 60.0\nexcluded-modules = []\n'
                f'test-command = "{PYTEST} {existing}"\n\n[cosmic-ray.distributor]\nname = "local"\n')


MEMORY = 3 << 30   # bytes of address space a mutant's test run may take: a mutant that loops appending must not
                    # take the machine's memory (a shifted index in redact._spans grew one to 15 GB)


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


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


def _forget_survivors(session: str) -> int:
    """Mark the session's surviving mutants, and those that could not run (a timeout, a tree that vanished under
    the worker), as not yet run, so that `exec` runs them (alone) with today's tests."""
    import sqlite3
    with sqlite3.connect(session) as db:
        gone = [row[0] for row in db.execute("SELECT job_id FROM work_results WHERE test_outcome = 'SURVIVED' "
                                             "OR worker_outcome != 'NORMAL'")]
        db.executemany("DELETE FROM work_results WHERE job_id = ?", [(j,) for j in gone])
    return len(gone)


def run_group(name: str, modules: list, tests: list, keep: str | None, survivors: bool = False,
              only_defs: str | None = None) -> dict:
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
        only = only_defs or only
        cfg, session = os.path.join(work, "cr.toml"), os.path.join(work, f"{os.path.basename(module)}.sqlite")
        _config(cfg, module, tests)
        if survivors and os.path.exists(session):
            _forget_survivors(session)
        else:
            subprocess.run(["cosmic-ray", "init", cfg, session], cwd=tree, env=env, check=True, capture_output=True)
            if only:
                _only(session, set(only.split(",")))
        subprocess.run(["cosmic-ray", "exec", cfg, session], cwd=tree, env=env, check=True, capture_output=True,
                       preexec_fn=_bounded)
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
    parser.add_argument("--survivors", action="store_true",
                        help="with --keep: run again only the mutants that survived (or could not run) in the kept "
                             "session, with the tests as they are now (the score is the whole session's); never "
                             "while another run uses the same DIR")
    parser.add_argument("--only", metavar="F,G", help="mutate only these definitions of the groups' modules (e.g. "
                                                       "the ones a fix changed, after a full run)")
    args = parser.parse_args(argv)
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]   # the venv's tools
    if args.survivors and not args.keep:
        parser.error("--survivors needs --keep DIR (the session of the first run)")
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
        r = run_group(name, modules, tests, args.keep, args.survivors, args.only)
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
