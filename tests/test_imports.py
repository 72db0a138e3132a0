"""Start-up stays light: --help, --version, rules and offline diagnosis never import the kubernetes client."""
import os
import subprocess
import sys

import pytest

from kubectl_gpudoctor import __version__
from tests.conftest import ROOT

PROBE = """
import sys
from kubectl_gpudoctor.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("KUBERNETES_IMPORTED=" + str(any(m == "kubernetes" or m.startswith("kubernetes.") for m in sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["rules"], ["pod", "--help"],
                                  ["--from", os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")]])
def test_no_kubernetes_import(args):
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT)
    assert "KUBERNETES_IMPORTED=False" in proc.stderr, proc.stderr


def test_live_path_avoids_the_typed_api_classes():
    """Raw GETs through ApiClient: the ~250 pydantic models behind CoreV1Api are never loaded."""
    code = ("import sys; from kubectl_gpudoctor.collect import api, kubeconfig, pod; import kubernetes.client.api_client;"
            "print(sum(1 for m in sys.modules if m.startswith('kubernetes.client.models.')),"
            " 'kubernetes.client.api.core_v1_api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout.split()
    assert out[1] == "False", out
    assert int(out[0]) < 50, out


def test_live_diagnosis_with_a_plain_kubeconfig_never_imports_kubernetes(tmp_path):
    """A token or client-certificate kubeconfig is read without the client library (exec plugins and in-cluster
    config still go through it: tests/test_kubeconfig.py)."""
    from tests.live import serving
    case = os.path.join(ROOT, "tests", "scenarios", "healthy-vllm")
    with serving(case, tmp_path, namespace="serving") as (srv, kc):
        proc = subprocess.run([sys.executable, "-c", PROBE, "chat-6b7c9d8f4-m2kqz", "--kubeconfig", kc, "-o", "json"],
                              capture_output=True, text=True, cwd=ROOT)
    assert '"status": "healthy"' in proc.stdout, proc.stderr
    assert "KUBERNETES_IMPORTED=False" in proc.stderr, proc.stderr


# Modules a live pod diagnosis once loaded at ~1.5-15 ms of start-up apiece: click (quickargs.py reads a plain pod
# diagnosis's flags; click reads every other command line), dataclasses (it compiles every class's methods:
# kubectl_gpudoctor/record.py stands in; tabulate imports it, and loads only for a report with a table), and modules
# imported for one call each (a thread pool, a terminal's width, the idna codec for an ASCII host name), which
# collect/parallel.py, render/wrap.py and collect/transport.py do without.
NOT_ON_THE_LIVE_PATH = ("click", "dataclasses", "concurrent.futures", "logging", "shutil", "encodings.idna")
# The installed command (launch.py), reporting at exit what it loaded.
LAUNCH_PROBE = f"""
import atexit, sys
atexit.register(lambda: print("LOADED=" + repr(sorted(m for m in {NOT_ON_THE_LIVE_PATH!r} if m in sys.modules)),
                              file=sys.stderr))
sys.argv[0] = "kubectl-gpudoctor"
from kubectl_gpudoctor.launch import main
main()
"""


@pytest.mark.parametrize("output", ["text", "json"])
def test_a_live_pod_diagnosis_leaves_start_up_only_modules_unloaded(tmp_path, output):
    from tests.live import serving
    case = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
    with serving(case, tmp_path, namespace="serving") as (srv, kc):
        proc = subprocess.run([sys.executable, "-c", LAUNCH_PROBE, "inference-7d9f8b6c5-x2x9q", "--kubeconfig", kc,
                               "-o", output], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "oom-killed" in proc.stdout, proc.stderr
    assert "LOADED=[]" in proc.stderr, proc.stderr


def test_any_other_command_line_still_goes_to_click(tmp_path):
    """A subcommand, a kubectl target form or a flag quickargs.py does not read: click reads it (and loads)."""
    proc = subprocess.run([sys.executable, "-c", LAUNCH_PROBE, "po/inference-7d9f8b6c5-x2x9q", "--from",
                           os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "'click'" in proc.stderr and "oom-killed" in proc.stdout, proc.stderr


def test_no_module_of_the_package_imports_dataclasses():
    """Not even inside a function: records (kubectl_gpudoctor/record.py) stand in for them."""
    import ast
    offenders = []
    for folder, _, files in os.walk(os.path.join(ROOT, "kubectl_gpudoctor")):
        for f in (f for f in files if f.endswith(".py")):
            path = os.path.join(folder, f)
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module] if isinstance(node, ast.ImportFrom) and not node.level else []
                offenders += [os.path.relpath(path, ROOT) for n in names if n.split(".")[0] == "dataclasses"]
    assert not offenders, offenders


def test_version_answers_before_click_loads():
    """The installed command's `--version` (what scripts and krew call most) loads neither click nor the CLI."""
    code = ("import sys; sys.argv[1:] = ['--version']\nimport kubectl_gpudoctor.launch as launch\n"
            "try:\n    launch.main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('click', 'kubectl_gpudoctor.cli', 'kubernetes') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["kubectl-gpudoctor " + __version__, "[]"], out


def _top_level_imports():
    """{module: modules of this package it imports at its top level}, read from the source."""
    import ast
    pkg_root = os.path.join(ROOT, "kubectl_gpudoctor")
    modules = {}
    for folder, _, files in os.walk(pkg_root):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, f), ROOT)[:-3].replace(os.sep, ".")
                modules[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(folder, f)
    graph = {}
    for mod, path in modules.items():
        package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
        deps = set()
        for node in ast.parse(open(path, encoding="utf-8").read()).body:
            if isinstance(node, ast.ImportFrom) and node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + [node.module or ""]).rstrip(".")
                deps |= {m for m in [base] + [f"{base}.{a.name}" for a in node.names] if m in modules and m != mod}
        graph[mod] = deps
    return graph


def test_the_package_has_no_import_cycle():
    """A live diagnosis imports the rules in a second thread while the first collects (kubectl_gpudoctor/preload.py);
    concurrent imports are safe only while no module imports, at its top level, one that imports it back."""
    graph, state, path = _top_level_imports(), {}, []

    def visit(mod):
        state[mod] = "open"
        path.append(mod)
        for dep in sorted(graph[mod]):
            if mod.startswith(dep + "."):   # a module's own package runs first; its __init__ importing it is no cycle
                continue
            assert state.get(dep) != "open", "import cycle: " + " -> ".join(path[path.index(dep):] + [dep])
            if dep not in state:
                visit(dep)
        path.pop()
        state[mod] = "done"

    for mod in sorted(graph):
        if mod not in state:
            visit(mod)
    assert len(graph) > 100 and sum(map(len, graph.values())) > 300, "the graph was read"


LOADED_WHILE_WAITING = """
import sys, threading
from kubectl_gpudoctor.collect import transport
from kubectl_gpudoctor.cli import main
get, seen, importer = transport.Transport.get, [], []
class Who:   # which thread imports the verdict (and with it the rules): an order, whatever the machine's speed
    def find_spec(self, name, path=None, target=None):
        if name == "kubectl_gpudoctor.verdict":
            importer.append(threading.current_thread().name)
        return None
sys.meta_path.insert(0, Who())
def recording(self, *a, **k):
    answer = get(self, *a, **k)
    seen.append("kubectl_gpudoctor.verdict" in sys.modules or any(t.name == "gpudoctor-preload" for t in threading.enumerate()))
    return answer
transport.Transport.get = recording
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("PRELOAD_BY_FIRST_ANSWER=" + str(seen[0]), "IMPORTED_BY=" + ",".join(importer), "GETS=" + str(len(seen)), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["inference-7d9f8b6c5-x2x9q"], ["node", "gpu-node-01"]])
def test_a_live_diagnosis_loads_the_rules_while_its_requests_are_in_flight(tmp_path, args):
    """The ~100 rule modules load during the round trips, not after them (the verdict needs them only then): the
    preload thread imports them, started before the first answer is read. Checked as an order, not a race."""
    from tests.live import serving
    case = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
    with serving(case, tmp_path, namespace="serving") as (srv, kc):
        proc = subprocess.run([sys.executable, "-c", LOADED_WHILE_WAITING, *args, "--kubeconfig", kc, "-o", "json"],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert '"status"' in proc.stdout, proc.stderr
    assert "PRELOAD_BY_FIRST_ANSWER=True" in proc.stderr and "IMPORTED_BY=gpudoctor-preload " in proc.stderr, proc.stderr



LAUNCH = "import sys; sys.argv[0] = 'kubectl-gpudoctor'\nfrom kubectl_gpudoctor.launch import main\nmain()"


@pytest.mark.parametrize("columns", ["40", "60", "80", "100", "101", "102", "150", "250"])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_top_level_help_is_clicks_own_at_every_width(columns, flag):
    """The installed command answers --help from kubectl_gpudoctor/helptext.py without loading click, for the
    widths it saved; whatever the width, the bytes are those click prints (a stale helptext.py fails here:
    python -m kubectl_gpudoctor.render.helpcache > kubectl_gpudoctor/helptext.py)."""
    env = dict(os.environ, COLUMNS=columns)
    fast = subprocess.run([sys.executable, "-c", LAUNCH, flag], capture_output=True, text=True, env=env, cwd=ROOT)
    click_ = subprocess.run([sys.executable, "-m", "kubectl_gpudoctor", flag], capture_output=True, text=True, env=env,
                            cwd=ROOT)
    assert (fast.returncode, fast.stdout, fast.stderr) == (click_.returncode, click_.stdout, click_.stderr) == \
        (0, click_.stdout, "")


def test_saved_help_loads_no_click_at_the_common_widths():
    from kubectl_gpudoctor import cli, launch
    assert launch.MAX_CONTENT_WIDTH == cli.CONTEXT["max_content_width"]
    for columns in ("80", "120"):
        code = LAUNCH.replace("main()", "try:\n    main()\nexcept SystemExit:\n    pass\n"
                              "print('click' in sys.modules, file=sys.stderr)")
        proc = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True,
                              env=dict(os.environ, COLUMNS=columns), cwd=ROOT)
        assert proc.stdout.startswith("Usage: kubectl gpudoctor") and proc.stderr.strip() == "False", proc.stderr


def test_a_live_json_diagnosis_with_a_kubectl_written_kubeconfig_never_loads_pyyaml(tmp_path):
    """The kubeconfig is block YAML as kubectl writes it (collect/blockyaml.py reads it); nothing else in a pod
    diagnosis printed as JSON needs PyYAML, whose import costs more than the whole verdict."""
    from tests.live import serving
    case = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
    probe = PROBE.replace('"KUBERNETES_IMPORTED="', '"YAML_IMPORTED=" + str("yaml" in sys.modules) + " KUBERNETES_IMPORTED="')
    with serving(case, tmp_path, namespace="serving") as (srv, kc):
        proc = subprocess.run([sys.executable, "-c", probe, "inference-7d9f8b6c5-x2x9q", "--kubeconfig", kc, "-o", "json"],
                              capture_output=True, text=True, cwd=ROOT)
    assert '"status": "failing"' in proc.stdout, proc.stderr
    assert "YAML_IMPORTED=False" in proc.stderr, proc.stderr


GC_AT_EXIT = ("import atexit, gc, sys\natexit.register(lambda: print('GC_ENABLED=' + str(gc.isenabled()), file=sys.stderr))\n"
              "sys.argv[0] = 'kubectl-gpudoctor'\nfrom kubectl_gpudoctor.launch import main\nmain()")


@pytest.mark.parametrize("command, enabled", [([], False), (["scan"], True)])
def test_the_cyclic_collector_is_off_for_a_diagnosis_and_on_for_a_scan(command, enabled):
    """A one-shot diagnosis never needs the cyclic collector; a scan of thousands of pods keeps it."""
    case = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
    proc = subprocess.run([sys.executable, "-c", GC_AT_EXIT, *command, "--from", case, "-o", "json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert '"status"' in proc.stdout or '"items"' in proc.stdout, proc.stderr
    assert f"GC_ENABLED={enabled}" in proc.stderr, proc.stderr


BEFORE_FIRST_REQUEST = """
import sys
from kubectl_gpudoctor import preload
from kubectl_gpudoctor.cli import main
start, seen = preload.Preload.start, []
def recording(self):
    seen.append(sorted(m for m in sys.modules if m.startswith(("kubectl_gpudoctor.gpu", "kubectl_gpudoctor.rules"))
                       or m in ("kubectl_gpudoctor.collect.pod", "kubectl_gpudoctor.collect.node")))
    start(self)
preload.Preload.start = recording
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("LOADED_BEFORE_FIRST_REQUEST=" + ",".join(seen[0]), file=sys.stderr)
"""


def test_the_node_view_sends_its_first_round_before_loading_the_gpu_stack_readers(tmp_path):
    """The node and what needs only its name go out first (collect/nodeview.py); the GPU-stack readers and the
    rules they share load in the second thread while that round is in flight."""
    from tests.live import serving
    case = os.path.join(ROOT, "tests", "cases", "oom-killed", "fail-startup-peak")
    with serving(case, tmp_path, namespace="serving") as (srv, kc):
        proc = subprocess.run([sys.executable, "-c", BEFORE_FIRST_REQUEST, "node", "gpu-node-01", "--kubeconfig", kc,
                               "-o", "json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert '"NodeDiagnosis"' in proc.stdout, proc.stderr
    assert "LOADED_BEFORE_FIRST_REQUEST=\n" in proc.stderr, proc.stderr
