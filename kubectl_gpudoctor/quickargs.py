"""The command line a user types most — `kubectl gpudoctor <pod>` with kubectl's flags — read without click, whose
import costs ~15 ms of every diagnosis; anything else, and anything this reader is unsure of, goes to click."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from .kube.workloads import KINDS
from .targets import NODE_WORDS, POD_WORDS

# The flags of cli.py's `_common`, as click reads them: dest -> (names, kind), kind one of "value", "flag",
# "multiple", a tuple of choices, or "tail" (an integer from 1 to 10000). tests/test_quickargs.py checks this
# table against click's own parameters, so a flag added there and not here fails the suite.
OPTIONS: Dict[str, Tuple[Tuple[str, ...], object]] = {
    "kubeconfig": (("--kubeconfig",), "value"),
    "context": (("--context",), "value"),
    "cluster": (("--cluster",), "value"),
    "user": (("--user",), "value"),
    "namespace": (("-n", "--namespace"), "value"),
    "all_namespaces": (("-A", "--all-namespaces"), "flag"),
    "request_timeout": (("--request-timeout",), "value"),
    "output": (("-o", "--output"), ("text", "wide", "json", "yaml")),
    "color": (("--color",), ("auto", "always", "never")),
    "source": (("--from",), "value"),
    "tail": (("--tail",), "tail"),
    "ignore": (("--ignore",), "multiple"),
    "verbose": (("-v", "--verbose"), "flag"),
    "as_user": (("--as",), "value"),
    "as_groups": (("--as-group",), "multiple"),
    "token": (("--token",), "value"),
    "server": (("-s", "--server"), "value"),
    "ca_file": (("--certificate-authority",), "value"),
    "insecure": (("--insecure-skip-tls-verify",), "flag"),
    "as_uid": (("--as-uid",), "value"),
    "username": (("--username",), "value"),
    "password": (("--password",), "value"),
    "client_certificate": (("--client-certificate",), "value"),
    "client_key": (("--client-key",), "value"),
    "tls_server_name": (("--tls-server-name",), "value"),
    "disable_compression": (("--disable-compression",), "flag"),
    "cache_dir": (("--cache-dir",), "value"),
    "log_level": (("--v",), "value"),
    "match_server_version": (("--match-server-version",), "flag"),
    "warnings_as_errors": (("--warnings-as-errors",), "flag"),
    "vmodule": (("--vmodule",), "value"),
    "log_flush_frequency": (("--log-flush-frequency",), "value"),
}
# cli.py's subcommands: a first word that names one is a command, not a pod.
COMMANDS = ("bundle", "help", "node", "nodes", "pod", "rules", "scan", "version", "workload")
TAIL_RANGE = (1, 10000)

_BY_NAME = {n: dest for dest, (names, _) in OPTIONS.items() for n in names}


def parse(argv: Sequence[str]) -> Optional[Tuple[str, dict]]:
    """(pod name, flags as click hands them to the `pod` command, merged as cli._merge merges them) for
    `[flags] POD [flags]`; None for every other command line (click reads it, and reports its errors)."""
    group, rest = _flags(argv)   # click's group reads flags up to its first argument, the pod's command the rest
    if group is None or not rest:
        return None
    pod, tail = rest[0], rest[1:]
    if not _plain_pod_name(pod):
        return None
    own, extra = _flags(tail, interspersed=True)
    if own is None or extra:
        return None
    merged = dict(group)   # cli._merge: the command's own flags win; those before it fill the rest
    for key, value in own.items():
        if value not in (None, False, ()):
            merged[key] = value
    return pod, merged


def _plain_pod_name(word: str) -> bool:
    # kubectl's target forms (po/x, deploy x, node x) and the subcommands are click's to resolve.
    low = word.lower()
    return bool(word) and "/" not in word and not word.startswith("-") and word not in COMMANDS \
        and low not in POD_WORDS + NODE_WORDS + tuple(KINDS)


def _flags(words: Sequence[str], interspersed: bool = False) -> Tuple[Optional[dict], List[str]]:
    """(flags, the arguments left) of words read as click reads them; (None, …) at anything uncertain."""
    flags: dict = {dest: (() if kind == "multiple" else False if kind == "flag" else None)
                   for dest, (_, kind) in OPTIONS.items()}
    args: List[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "-":
            return None, []
        if not word.startswith("-"):
            if not interspersed:
                return flags, list(words[i - 1:])
            args.append(word)
            continue
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        dest = _BY_NAME.get(name)
        if dest is None or (not name.startswith("--") and len(name) != 2):
            return None, []   # --, -h, --help, --version, -Av, -nNS, an unknown flag: click's
        kind = OPTIONS[dest][1]
        if kind == "flag":
            if eq:
                return None, []
            flags[dest] = True
            continue
        if not eq:
            if i >= len(words):
                return None, []
            value = words[i]
            i += 1
        if not value or value.startswith("-"):
            return None, []   # click may read these differently (a value that looks like a flag, an empty one)
        if kind == "multiple":
            flags[dest] += (value,)
        elif kind == "tail":
            if not (value.isascii() and value.isdigit()) or not TAIL_RANGE[0] <= int(value) <= TAIL_RANGE[1]:
                return None, []
            flags[dest] = int(value)
        elif isinstance(kind, tuple) and value not in kind:
            return None, []
        else:
            flags[dest] = value
    return flags, args
