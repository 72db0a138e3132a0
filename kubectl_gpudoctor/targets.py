"""Reads what kubectl users type as a target — `po/x`, `pod x`, `deploy x`, `cj/x`, `node/x`, `no x` — into the
command that diagnoses it and its argument; pure, no I/O."""
from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from .kube.workloads import KINDS

POD_WORDS = ("po", "pod", "pods")
NODE_WORDS = ("no", "node", "nodes")
SUPPORTED = "pods (po/), nodes (no/) and workloads: deploy, sts, ds, rs, job, cronjob (cj)"
# pflag accepts a shorthand flag with `=`: `-n=ns`, `-o=json`; click would keep the `=` in the value.
_SHORT_EQUALS = re.compile(r"^(-[A-Za-z])=(.*)$", re.S)
# kubectl's global boolean flags, which pflag also takes as `--flag=false` (strconv.ParseBool's spellings)
KUBECTL_BOOL_FLAGS = ("--insecure-skip-tls-verify", "--disable-compression", "--match-server-version",
                      "--warnings-as-errors")
_GO_BOOLS = {**dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
             **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False)}
_LEVEL = re.compile(r"^-v=?([0-9]+|(?<==).*)$", re.S)


class TargetError(ValueError):
    """A target kubectl knows but this plugin does not diagnose (svc/x, cm/x): a usage error."""


def split_short_equals(argv: Sequence[str]) -> List[str]:
    """`-n=ns` -> `-n ns`; kubectl's log level `-v=8`, `-v8`, `-v 8` -> `--v=8` (`-v` alone stays the plugin's
    --verbose); kubectl's `--insecure-skip-tls-verify=true|false` -> the flag or nothing (up to a `--`)."""
    out: List[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            return out + list(argv[i - 1:])
        name, eq, value = arg.partition("=")
        if eq and name in KUBECTL_BOOL_FLAGS and value in _GO_BOOLS:   # pflag: --insecure-skip-tls-verify=false
            if _GO_BOOLS[value]:
                out.append(name)
            continue
        level = _LEVEL.match(arg)
        if level:
            out.append("--v=" + level.group(1))
            continue
        if arg == "-v" and i < len(argv) and argv[i].isascii() and argv[i].isdigit():
            out.append("--v=" + argv[i])
            i += 1
            continue
        m = _SHORT_EQUALS.match(arg)
        out += [m.group(1), m.group(2)] if m else [arg]
    return out


def resolve(words: Sequence[str]) -> Optional[Tuple[str, str, List[str]]]:
    """(command, argument, rest) for `kind/name` or `kind name` at the start of `words`; None when the first word
    is a plain name (a pod). Raises TargetError for a kind/name whose kind is not diagnosed here."""
    if not words:
        return None
    first, rest = words[0], list(words[1:])
    if "/" in first:
        kind, _, obj = first.partition("/")
        if not obj:
            raise TargetError(f"{first}: expected KIND/NAME")
        return _by_kind(kind.lower(), obj, first) + (rest,)
    low = first.lower()
    if low in POD_WORDS + NODE_WORDS + tuple(KINDS) and rest and not rest[0].startswith("-"):
        return _by_kind(low, rest[0], f"{first} {rest[0]}") + (rest[1:],)
    return None


def _by_kind(kind: str, obj: str, said: str) -> Tuple[str, str]:
    if kind in POD_WORDS:
        return "pod", obj
    if kind in NODE_WORDS:
        return "node", obj
    if kind in KINDS:
        return "workload", f"{kind}/{obj}"
    raise TargetError(f"{said}: cannot diagnose {kind.split('.')[0]}; kubectl gpudoctor diagnoses {SUPPORTED}")
