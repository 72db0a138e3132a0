"""Property: real pod and node objects with a field deleted, retyped or absurd never crash the plugin or hang it."""
import contextlib
import io
import math
import os
import shutil
import tempfile

import yaml
from hypothesis import HealthCheck, Phase, event, given, settings, strategies as st

from tests.conftest import ROOT

CASES = [("pod", os.path.join(ROOT, "tests", "cases", *p)) for p in (
    ("oom-killed", "fail-startup-peak"), ("insufficient-gpu", "fail-fragmented"),
    ("image-pull-failed", "fail-ngc-private-unauthorized"), ("init-container-failing", "fail-oom-weights-download"),
    ("gpu-out-of-memory", "fail-tgi-warmup"))] + [("node", os.path.join(ROOT, "tests", "cases", *p)) for p in (
        ("device-plugin-not-running", "fail-nvml-library-not-found"),
        ("gpu-allocatable-zero", "fail-dra-driver-publishes-no-slice"))]
CASES = [(what, path) for what, path in CASES if os.path.isdir(path)]

ABSURD = [None, "", "x" * 300, -1, 0, 10 ** 100, 1e100, math.inf, math.nan, True, [], {}, [1, "a"], {"a": [1]},
          "\x1b]0;owned\x07\u202e\x00", "99999-99-99T99:99:99Z", "-5Gi", "1e100000Gi", ["x"] * 3]


def _paths(obj, prefix=()):
    """Every (parent, key) in an object, depth first."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from _paths(value, prefix + (key,))


def _apply(obj, path, action, value):
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    if action == "delete":
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
    else:
        parent[path[-1]] = value


def _run(argv):
    from kubectl_gpudoctor import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=40, deadline=30000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
          phases=[Phase.explicit, Phase.reuse, Phase.generate], database=None, derandomize=True)
@given(data=st.data())
def test_mutated_real_objects_never_crash(data):
    os.environ.pop("GPUDOCTOR_STRICT", None)
    try:
        what, case = data.draw(st.sampled_from(CASES), label="case")
        docs = [d for d in yaml.safe_load_all(open(os.path.join(case, "objects.yaml"))) if d]
        wanted = "Pod" if what == "pod" else "Node"
        targets = [d for d in docs if d.get("kind") == wanted]
        obj = targets[0]
        for _ in range(data.draw(st.integers(1, 3), label="mutations")):
            paths = list(_paths(obj))
            if not paths:
                break
            path = data.draw(st.sampled_from(paths), label="path")
            action = data.draw(st.sampled_from(["delete", "replace"]), label="action")
            _apply(obj, path, action, data.draw(st.sampled_from(ABSURD), label="value"))
        tmp = tempfile.mkdtemp(prefix="gpudoctor-prop-")
        try:
            copy = os.path.join(tmp, "case")
            shutil.copytree(case, copy)
            with open(os.path.join(copy, "objects.yaml"), "w") as f:
                f.write(yaml.safe_dump_all(docs, allow_unicode=False))
            for output in ("text", "json"):
                code, out, err = _run([what, "--from", copy, "-o", output])
                assert code in (0, 1, 2, 3), (code, err)
                # a check that crashes on a shape the loader let through is listed in the report (exit 3), never a
                # traceback or a one-line "internal error"
                assert "Traceback" not in out + err and "internal error" not in err, err
                assert err.count("\n") <= 1, err
                if code == 2:
                    assert err.startswith("error: ")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        os.environ["GPUDOCTOR_STRICT"] = "1"


# --- live: the same mutations served by the suite's API server ------------------------------------------------

_SERVERS = {}


def _server(case):
    """One server per case for the whole test (started once; each example edits its objects in place)."""
    from tests.apiserver import FakeApiServer, load_case
    if case not in _SERVERS:
        objects, logs = load_case(case)
        srv = FakeApiServer(objects, logs).start()
        kc = srv.write_kubeconfig(os.path.join(tempfile.mkdtemp(prefix="gpudoctor-prop-kc-"), "kc"))
        _SERVERS[case] = (srv, kc, objects)
    return _SERVERS[case]


def teardown_module(_module):
    for srv, _, _ in _SERVERS.values():
        srv.stop()
    _SERVERS.clear()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
          phases=[Phase.explicit, Phase.reuse, Phase.generate], database=None, derandomize=True)
@given(data=st.data())
def test_mutated_objects_served_live_always_get_a_report_and_every_drop_is_a_gap(data):
    """A live server answering the target (or the pod's node) with a field deleted, retyped or absurd (NaN,
    1e100, a list for a name...): a report comes with exit 0, 1 or 3, and an object the shape checks refuse is
    named in a `malformed` gap of its source."""
    import json
    from kubectl_gpudoctor.kube import shapes
    os.environ.pop("GPUDOCTOR_STRICT", None)
    what, case = data.draw(st.sampled_from(CASES), label="case")
    srv, kc, objects = _server(case)
    wanted = "Pod" if what == "pod" else "Node"
    target = next(o for o in objects if o.get("kind") == wanted)
    victims = [target] + ([o for o in objects if o.get("kind") == "Node"
                           and o["metadata"]["name"] == (target.get("spec") or {}).get("nodeName")]
                          if what == "pod" else [])
    victim = data.draw(st.sampled_from(victims), label="victim")
    meta = victim["metadata"]
    stored = srv.stored(victim["kind"], meta.get("namespace"), meta["name"])
    original = json.loads(json.dumps(stored))
    mutated = json.loads(json.dumps(stored))
    try:
        for _ in range(data.draw(st.integers(1, 3), label="mutations")):
            # a GET by name answers an object of that name: the target's name and metadata stay
            paths = [p for p in _paths(mutated) if p[:2] not in (("metadata",), ("metadata", "name"))
                     and p[:1] not in (("kind",), ("apiVersion",))]
            if not paths:
                break
            path = data.draw(st.sampled_from(paths), label="path")
            action = data.draw(st.sampled_from(["delete", "replace"]), label="action")
            _apply(mutated, path, action, data.draw(st.sampled_from(ABSURD), label="value"))
        stored.clear()
        stored.update(json.loads(json.dumps(mutated)))
        args = [what, target["metadata"]["name"], "--kubeconfig", kc, "-o", "json"]
        if what == "pod":
            args += ["-n", target["metadata"]["namespace"]]
        code, out, err = _run(args)
    finally:
        stored.clear()
        stored.update(original)
        os.environ["GPUDOCTOR_STRICT"] = "1"
    assert code in (0, 1, 3), (code, err)
    assert "Traceback" not in out + err and "internal error" not in err, err
    doc = json.loads(out)   # a report, always: a crashed check is listed in it (exit 3), never the run
    from kubectl_gpudoctor.collect.api import _json
    served = _json(json.dumps(mutated))   # as the plugin decodes the answer: NaN and infinities refused
    refused = shapes.problems(served, victim["kind"], walk=True)
    source = "pods" if victim["kind"] == "Pod" else "nodes"
    malformed = [g for g in doc["gaps"] if g["reason"] == "malformed" and g["source"] == source]
    event(f"{victim['kind']} {'refused' if refused else 'accepted'}, exit {code}")
    if refused:
        assert malformed, (refused, doc["gaps"])
    else:
        assert not malformed, (malformed, served)
