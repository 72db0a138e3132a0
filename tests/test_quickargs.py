"""quickargs.py reads a plain pod diagnosis's command line without click: where it answers, click (cli.py) must run
the same pod diagnosis with the same flags; it declines whatever else click reads (subcommands, kubectl's target
forms, help, errors). Its flag table is checked against click's own parameters."""
import pytest
from hypothesis import given, settings, strategies as st

from kubectl_gpudoctor import cli, quickargs
from kubectl_gpudoctor.targets import split_short_equals


def _click_reads(argv, monkeypatch):
    """(command, target, flags) cli.py's click commands hand to a diagnosis for argv; or the exit code."""
    seen = []

    def diagnose(ctx, what, target, flags):
        seen.append((what, target, flags))
        return 0
    monkeypatch.setattr(cli, "_diagnose", diagnose)
    with pytest.raises(SystemExit) as exc:
        cli.main(list(argv))
    return seen[0] if seen else exc.value.code


def test_the_flag_table_is_clicks():
    params = {p.name: p for p in cli.pod.params if p.name != "pod_name"}
    assert set(params) == set(quickargs.OPTIONS)
    for dest, (names, kind) in quickargs.OPTIONS.items():
        p = params[dest]
        assert tuple(p.opts) == names and not p.secondary_opts, dest
        if kind == "flag":
            assert p.is_flag, dest
        elif kind == "multiple":
            assert p.multiple and not p.is_flag, dest
        elif kind == "tail":
            assert (p.type.min, p.type.max) == quickargs.TAIL_RANGE and not p.type.min_open and not p.type.max_open
        elif isinstance(kind, tuple):
            assert tuple(p.type.choices) == kind and p.type.case_sensitive, dest
        else:
            assert kind == "value" and not p.is_flag and not p.multiple and p.type.name == "text", dest
    group = {p.name for p in cli.main_group.params} - {"version"}
    assert group == set(quickargs.OPTIONS), "the flags before the pod name are the same"
    assert set(quickargs.COMMANDS) == set(cli.main_group.commands)


@pytest.mark.parametrize("argv", [
    ["mypod"],
    ["mypod", "-n", "serving", "-o", "json"],
    ["-n", "serving", "mypod", "--tail=5", "-A", "-v"],
    ["mypod", "-n=serving", "-o=yaml", "--color", "never"],
    ["--kubeconfig", "/tmp/kc", "--context", "prod", "mypod", "--as", "alice", "--as-group", "a", "--as-group", "b"],
    ["-n", "a", "mypod", "-n", "b"],                                   # the pod command's own flag wins
    ["--ignore", "oom-killed", "mypod", "--ignore", "app-error"],     # …and its list replaces the one before it
    ["mypod", "--from", "bundle.tgz", "--request-timeout", "30s", "--insecure-skip-tls-verify", "-s", "https://x"],
    # kubectl's global flags, which kubectl hands the plugin (-v=8 and -v 8 are its log level, -v alone --verbose)
    ["mypod", "--as", "jane", "--as-uid", "1001", "--tls-server-name", "api.internal", "--disable-compression"],
    ["--username", "admin", "--password=hunter2", "mypod", "--client-certificate", "c.crt", "--client-key", "c.key"],
    ["mypod", "-v=8", "--cache-dir", "/tmp/c", "--match-server-version", "--warnings-as-errors"],
    ["mypod", "-v", "8"], ["mypod", "--v", "8", "-v"], ["-v8", "mypod"], ["mypod", "--v=8"],
])
def test_common_command_lines_are_read_as_click_reads_them(argv, monkeypatch):
    quick = quickargs.parse(split_short_equals(argv))
    assert quick is not None, argv
    assert _click_reads(argv, monkeypatch) == ("pod", *quick)


@pytest.mark.parametrize("argv", [
    [], ["pod", "x"], ["po/x"], ["deploy/x"], ["deploy", "x"], ["node", "n1"], ["no/n1"], ["scan", "-A"], ["rules"],
    ["help"], ["version"], ["x", "-h"], ["x", "--help"], ["--version"], ["x", "y"], ["x", "--"], ["x", "-Av"],
    ["x", "-nserving"], ["x", "-o", "xml"], ["x", "--tail", "0"], ["x", "--tail", "1e3"], ["x", "-A=true"],
    ["x", "--unknown"], ["x", "-n"], ["x", "-n", "-A"], ["x", "--from", "-"], ["x", "--namespace="], ["Pod"], [""],
])
def test_everything_else_is_left_to_click(argv):
    assert quickargs.parse(split_short_equals(argv)) is None


WORDS = st.sampled_from(["mypod", "x", "pod", "po", "Po", "po/x", "deploy", "deploy/x", "cj/x", "node", "no/n",
                         "scan", "rules", "help", "version", "workload", "bundle", "svc/x", "-", "--", "", "a b",
                         "serving", "json", "yaml", "text", "xml", "never", "auto", "5", "0", "10000", "10001",
                         "٣", "30s", "bogus", "=", "-x", "--", "-h", "--help", "--version", "--unknown"])
FLAGS = st.sampled_from([n for names, _ in quickargs.OPTIONS.values() for n in names] + ["--as-group", "-Av", "-vA"])


@st.composite
def command_lines(draw):
    out = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            out.append(draw(WORDS))
        elif kind == 1:
            out.append(draw(FLAGS))
        elif kind == 2:
            out += [draw(FLAGS), draw(WORDS)]
        else:
            out.append(f"{draw(FLAGS)}={draw(WORDS)}")
    return out


VALUES = {"output": ["json", "yaml", "text", "xml", "JSON"], "color": ["auto", "always", "never", "yes"],
          "tail": ["1", "80", "10000", "0", "10001", "05", "+5", "5_0", " 5", "٣"]}
ANY = ["serving", "kube-system", "/tmp/kc", "https://10.0.0.1:6443", "30s", "oom-killed", "a=b", "x y", "Ünï", "pod",
       "scan", "-x", "", "--", "po/x"]


@st.composite
def flag_words(draw):
    dest = draw(st.sampled_from(sorted(quickargs.OPTIONS)))
    names, kind = quickargs.OPTIONS[dest]
    name = draw(st.sampled_from(names))
    if kind == "flag":
        return [name] if draw(st.integers(0, 9)) else [name + "=true"]
    value = draw(st.sampled_from(VALUES.get(dest, ANY)))
    return [f"{name}={value}"] if draw(st.booleans()) else [name, value]


@st.composite
def pod_command_lines(draw):
    """Mostly what users type: flags, a pod name, flags — with now and then a value or a name click refuses."""
    before = [w for _ in range(draw(st.integers(0, 3))) for w in draw(flag_words())]
    name = draw(st.sampled_from(["mypod", "inference-7d9f8b6c5-x2x9q", "trainer-0"] * 3 + ["pod", "po/x", "scan", "-"]))
    after = [w for _ in range(draw(st.integers(0, 4))) for w in draw(flag_words())]
    return before + [name] + after


@settings(max_examples=700, deadline=None)
@given(argv=st.one_of(pod_command_lines(), command_lines()))
def test_wherever_it_answers_click_reads_the_same(argv):
    quick = quickargs.parse(split_short_equals(argv))
    if quick is None:
        return
    with pytest.MonkeyPatch.context() as mp:
        assert _click_reads(argv, mp) == ("pod", *quick), argv
