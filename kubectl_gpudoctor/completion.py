"""Shell completion for `kubectl gpudoctor <TAB>`: subcommands, flags, flag values, rule ids, pod, node and
workload names.

kubectl >= 1.26 completes a plugin's arguments by running `kubectl_complete-gpudoctor` (found on PATH) with the
words typed after the plugin name, the last one being the word under the cursor ("" for a new word), and reads
one candidate per line (`value` or `value<TAB>description`), then an optional last line `:<directive>` — cobra's
ShellCompDirective bit set (kubernetes/kubectl pkg/cmd/plugin.go, pluginCompletion/getPluginCompletions).
Cobra-style shims call `<plugin> __complete <words…>`: a leading `__complete` is accepted too.

Fast and silent: names come from one metadata-only GET/LIST against the current context with a short timeout;
any failure yields the static candidates only, never a message (kubectl shows our stderr on the terminal).
"""
from __future__ import annotations

import os
import sys
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

# cobra.ShellCompDirective bits
DEFAULT = 0          # no candidates -> the shell completes file names
NO_SPACE = 2
NO_FILE_COMP = 4

LIST_TIMEOUT = 3.0   # seconds; a TAB that hangs longer is worse than no names
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
LIST_LIMIT = "500"

Lister = Callable[[str, Dict[str, Optional[str]]], List[Tuple[str, str]]]


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point `kubectl_complete-gpudoctor`: prints candidates and the directive, always exits 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "__complete":
        args = args[1:]
    debug = bool(os.environ.get("GPUDOCTOR_DEBUG"))
    saved_err = sys.stderr
    if not debug:
        sys.stderr = open(os.devnull, "w")  # libraries' warnings would land in the middle of the prompt
    try:
        words, directive = complete(args, live_names)
    except Exception:  # noqa: BLE001 — completion never fails loudly
        if debug:
            raise
        words, directive = [], NO_FILE_COMP
    finally:
        if sys.stderr is not saved_err:
            sys.stderr.close()
            sys.stderr = saved_err
    out = "".join(f"{w}\n" for w in words) + f":{directive}\n"
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        pass
    sys.exit(0)


# ---------------------------------------------------------------------------------------------------------------
# What the CLI accepts, read from the click definitions so completion cannot drift from the commands.

class _Spec:
    def __init__(self, command):
        self.command = command
        self.value_opts: Dict[str, object] = {}   # "--output" / "-o" -> click.Option taking a value
        self.flag_opts: Dict[str, object] = {}    # boolean flags
        for param in getattr(command, "params", []):
            if getattr(param, "param_type_name", "") != "option" or getattr(param, "hidden", False):
                continue
            names = list(param.opts) + list(param.secondary_opts)
            target = self.flag_opts if (param.is_flag or param.count) else self.value_opts
            for n in names:
                target[n] = param

    def flag_candidates(self) -> List[Tuple[str, str]]:
        seen, out = set(), []
        for table in (self.value_opts, self.flag_opts):
            for name, param in table.items():
                if name.startswith("--") and name not in seen:
                    seen.add(name)
                    out.append((name, _first_sentence(param.help)))
        out.append(("--help", "Show the help."))
        return out


def _first_sentence(text: Optional[str]) -> str:
    text = (text or "").strip().split("\n")[0]
    cut = text.find(". ")
    return (text[:cut + 1] if cut > 0 else text).replace("\t", " ")


def _group():
    from .cli import main_group
    return main_group


# ---------------------------------------------------------------------------------------------------------------

def complete(args: Sequence[str], lister: Lister) -> Tuple[List[str], int]:
    """Candidates (already filtered by the typed prefix) and the cobra directive for the words `args`."""
    group = _group()
    words, current = list(args[:-1]), (args[-1] if args else "")
    spec, command_name, positionals, conn = _Spec(group), None, [], {}
    i = 0
    while i < len(words):
        w = words[i]
        if w == "--":
            positionals.extend(words[i + 1:])
            break
        if w.startswith("-") and len(w) > 1:
            name, eq, value = w.partition("=")
            param = spec.value_opts.get(name)
            if param is None and not name.startswith("--") and name[:2] in spec.value_opts and len(name) > 2:
                param, value, eq = spec.value_opts[name[:2]], name[2:], "="       # -nNAMESPACE
            if param is not None:
                if not eq:
                    if i + 1 >= len(words):          # the word being completed is this flag's value
                        return _value_candidates(param, current, conn, lister, "")
                    value = words[i + 1]
                    i += 1
                conn[param.name] = value
            i += 1
            continue
        if command_name is None and not positionals and w in group.commands:
            command_name = w
            spec = _merged_spec(spec, group.commands[w])
        else:
            positionals.append(w)
        i += 1

    if current.startswith("-"):
        name, eq, value = current.partition("=")
        if eq and name in spec.value_opts:
            return _value_candidates(spec.value_opts[name], value, conn, lister, name + "=")
        return _filter(spec.flag_candidates(), current), NO_FILE_COMP

    candidates: List[Tuple[str, str]] = []
    takes_ref = command_name in (None, "workload", "bundle") and not positionals
    if takes_ref and "/" in current:                      # deploy/<TAB>, sts/tr<TAB>: that kind's names
        return _filter(_workload_names(current.split("/", 1)[0], conn, lister), current), NO_FILE_COMP
    if command_name is None and not positionals:
        candidates += [(n, c.get_short_help_str(limit=60)) for n, c in group.commands.items()
                       if not getattr(c, "hidden", False)]
        candidates += lister("pods", conn)
    elif command_name in ("pod", "bundle") and not positionals:
        candidates += lister("pods", conn)
    elif command_name == "node" and not positionals:
        candidates += lister("nodes", conn)
    elif command_name == "rules" and not positionals:
        from .rules import RULES
        candidates += [(r.id, r.title) for r in RULES.values()]
    elif command_name == "help" and not positionals:
        candidates += [(n, c.get_short_help_str(limit=60)) for n, c in group.commands.items()
                       if not getattr(c, "hidden", False)]
    if takes_ref and current:                             # d<TAB>: deploy/ (the shell adds no space after it)
        refs = [(f"{alias}/", kind.kind) for alias, kind in _short_kinds()]
        words = _filter(candidates + refs, current)
        return words, NO_FILE_COMP | (NO_SPACE if words and all(w.split("\t")[0].endswith("/") for w in words) else 0)
    return _filter(candidates, current), NO_FILE_COMP


def _short_kinds():
    """(short form, kind) of each workload kind a target may name: deploy, sts, ds, rs, job, cj."""
    from .kube.workloads import KINDS
    return [(alias, KINDS[alias]) for alias in ("deploy", "sts", "ds", "rs", "job", "cj")]


def _workload_names(alias: str, conn: dict, lister: Lister) -> List[Tuple[str, str]]:
    """`alias/name` for the objects of the kind `alias` names (deploy, deployment, deployments.apps…, po/, node/)."""
    from .kube.workloads import KINDS
    kind = KINDS.get(alias.lower())
    what = kind.resource if kind else {"po": "pods", "pod": "pods", "pods": "pods", "no": "nodes", "node": "nodes",
                                       "nodes": "nodes"}.get(alias.lower())
    return [(f"{alias}/{n}", d) for n, d in lister(what, conn)] if what else []


def _merged_spec(parent: _Spec, command) -> _Spec:
    """Flags given before the subcommand stay valid after it (the CLI accepts them anywhere)."""
    spec = _Spec(command)
    for name, param in parent.value_opts.items():
        spec.value_opts.setdefault(name, param)
    for name, param in parent.flag_opts.items():
        spec.flag_opts.setdefault(name, param)
    return spec


def _value_candidates(param, typed: str, conn: dict, lister: Lister, prefix: str) -> Tuple[List[str], int]:
    import click

    if isinstance(param.type, click.Choice):
        values = [(str(c), "") for c in param.type.choices]
    elif param.name in ("source", "kubeconfig"):
        return [], DEFAULT                                   # a path: let the shell complete file names
    elif param.name in ("context", "cluster", "user"):
        values = [(n, "") for n in kubeconfig_names(param.name, conn)]
    elif param.name == "namespace":
        values = lister("namespaces", conn)
    elif param.name == "ignore":
        from .rules import RULES
        values = [(r.id, r.title) for r in RULES.values()]
    else:
        return [], NO_FILE_COMP
    return [prefix + w for w in _filter(values, typed)], NO_FILE_COMP


def _filter(candidates: Iterable[Tuple[str, str]], typed: str) -> List[str]:
    out, seen = [], set()
    for value, desc in candidates:
        if value.startswith(typed) and value not in seen:
            seen.add(value)
            out.append(f"{value}\t{desc}" if desc else value)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Names from the kubeconfig and the cluster.

def kubeconfig_names(kind: str, conn: dict) -> List[str]:
    """Context, cluster or user names from the kubeconfig files kubectl would read (no network)."""
    import yaml

    from .collect.kubeconfig import ConnOptions, kubeconfig_paths

    names: List[str] = []
    for path in kubeconfig_paths(ConnOptions(kubeconfig=conn.get("kubeconfig"))):
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        for entry in doc.get(kind + "s") or []:
            if isinstance(entry, dict) and entry.get("name") and entry["name"] not in names:
                names.append(str(entry["name"]))
    return names


def live_names(what: str, conn: dict) -> List[Tuple[str, str]]:
    """Pod or workload names in the chosen namespace, node names or namespace names; [] on any failure."""
    try:
        from .collect.api import Api
        from .collect.kubeconfig import ConnOptions, connect

        opts = ConnOptions(kubeconfig=conn.get("kubeconfig"), context=conn.get("context"), cluster=conn.get("cluster"),
                           user=conn.get("user"), namespace=conn.get("namespace"), request_timeout=LIST_TIMEOUT)
        c = connect(opts)
        path = {"pods": f"/api/v1/namespaces/{c.namespace}/pods", "nodes": "/api/v1/nodes",
                "namespaces": "/api/v1/namespaces"}.get(what)
        if path is None:   # a workload kind's resource: deployments, statefulsets, jobs…
            from .kube.workloads import KINDS
            kind = next(k for k in KINDS.values() if k.resource == what)
            path = f"{kind.base}/namespaces/{c.namespace}/{kind.resource}"
        resp = Api(c.client, LIST_TIMEOUT).get(path, {"limit": LIST_LIMIT}, accept=METADATA_LIST)
    except Exception:  # noqa: BLE001
        return []
    if resp.reason != "ok" or not isinstance(resp.body, dict):
        return []
    names = []
    for item in resp.body.get("items") or []:
        name = ((item or {}).get("metadata") or {}).get("name")
        if isinstance(name, str) and name and not any(ch in name for ch in "\n\t\r"):
            names.append((name, ""))
    return names
