"""Command line: parses kubectl-style flags anywhere, runs a command, prints the report; decides nothing itself."""
from __future__ import annotations

import sys

import click

from . import __version__
from .exitcodes import Exit

OUTPUTS = ("text", "wide", "json", "yaml")
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _common(f):
    """The contract's flags, accepted before or after the subcommand (kubectl passes everything through)."""
    opts = [
        click.option("--kubeconfig", metavar="PATH", help="Path to the kubeconfig file (else KUBECONFIG, ~/.kube/config, in-cluster)."),
        click.option("--context", metavar="NAME", help="The kubeconfig context to use."),
        click.option("--cluster", metavar="NAME", help="The kubeconfig cluster to use."),
        click.option("--user", metavar="NAME", help="The kubeconfig user to use."),
        click.option("-n", "--namespace", metavar="NS", help="Namespace of the pod (beats the context's namespace)."),
        click.option("-A", "--all-namespaces", is_flag=True, default=False, help="scan: the whole cluster; pod: find the pod in any namespace."),
        click.option("--request-timeout", metavar="DURATION", default=None, help="Timeout of each API request (e.g. 10s, 1m). Default 10s."),
        click.option("-o", "--output", type=click.Choice(OUTPUTS), default=None,
                     help="Output format. Default text; wide: every line whole, scan's full table."),
        click.option("--color", type=click.Choice(("auto", "always", "never")), default=None,
                      help="Color the text report. Default auto (NO_COLOR, FORCE_COLOR, tty)."),
        click.option("--from", "source", metavar="PATH",
                      help="Diagnose saved files instead of the cluster: a bundle directory or archive (.tgz), "
                           "a `kubectl get -o yaml|json` file, a `cluster-info dump` directory, or - (stdin)."),
        click.option("--tail", type=click.IntRange(1, 10000), default=None, help="Log lines read per container. Default 80."),
        click.option("--ignore", metavar="ID", multiple=True, help="Skip a rule (repeatable)."),
        click.option("-v", "--verbose", is_flag=True, default=False, help="Show passed and not-applicable checks too."),
        # kubectl's global connection flags; impersonation changes who reads, never what is done (GET/LIST only)
        click.option("--as", "as_user", metavar="USER", help="Username to impersonate for the reads."),
        click.option("--as-group", "as_groups", metavar="GROUP", multiple=True,
                      help="Group to impersonate (repeatable; with --as or the kubeconfig's as)."),
        click.option("--token", metavar="TOKEN",
                      help="Bearer token for the API server (beats the kubeconfig's token; a tokenFile still wins, "
                           "as in kubectl)."),
        click.option("-s", "--server", metavar="URL", help="The API server's address (beats the kubeconfig's; works without one)."),
        click.option("--certificate-authority", "ca_file", metavar="PATH", help="CA certificate file for the API server."),
        click.option("--insecure-skip-tls-verify", "insecure", is_flag=True, default=False,
                      help="Do not verify the API server's certificate (insecure)."),
        click.option("--as-uid", "as_uid", metavar="UID", help="UID to impersonate (with --as or the kubeconfig's as)."),
        click.option("--username", metavar="USER", help="Username for basic authentication to the API server."),
        click.option("--password", metavar="PASSWORD", help="Password for basic authentication to the API server."),
        click.option("--client-certificate", metavar="PATH", help="Client certificate file for TLS."),
        click.option("--client-key", metavar="PATH", help="Client key file for TLS."),
        click.option("--tls-server-name", metavar="NAME", help="Server name to check the API server's certificate against."),
        click.option("--disable-compression", is_flag=True, default=False, help="Ask for uncompressed answers."),
        # kubectl hands a plugin every global flag: these are accepted and change nothing here
        click.option("--cache-dir", metavar="PATH", help="Accepted, as kubectl's; the plugin keeps no cache."),
        click.option("--v", "log_level", metavar="N", help="kubectl's log level (-v=N, --v N): accepted, logs nothing; "
                                                           "-v alone is --verbose."),
        click.option("--match-server-version", is_flag=True, default=False,
                      help="Accepted, as kubectl's (the plugin has no client version to match)."),
        click.option("--warnings-as-errors", is_flag=True, default=False,
                      help="Accepted, as kubectl's (the plugin's reads show no server warnings)."),
        click.option("--vmodule", metavar="PATTERNS", hidden=True),                 # kubectl's logging: accepted
        click.option("--log-flush-frequency", metavar="DURATION", hidden=True),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


class DefaultGroup(click.Group):
    """`kubectl gpudoctor <pod>` means `kubectl gpudoctor pod <pod>`; kubectl's target forms (po/x, deploy x, cj/x,
    node/x) pick their command; a kind that is not diagnosed (svc/x) is a usage error."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            from .targets import TargetError, resolve
            try:
                found = resolve(args)
            except TargetError as exc:
                raise click.UsageError(str(exc))
            if found:
                command, target, rest = found
                return command, self.commands[command], [target] + rest
            return "pod", self.commands["pod"], args
        return super().resolve_command(ctx, args)


def _version(ctx, _param, value):
    if value and not ctx.resilient_parsing:
        click.echo(f"kubectl-gpudoctor {__version__}")
        ctx.exit(0)


@click.group(cls=DefaultGroup, context_settings=CONTEXT, invoke_without_command=True)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version, help="Print the version.")
@_common
@click.pass_context
def main_group(ctx, **flags):
    """Tell why a GPU pod (or node) is stuck and what exactly to change.

    \b
      kubectl gpudoctor <pod> [-n NS]       diagnose a pod
      kubectl gpudoctor deploy/<name>       a workload's pods (sts/, ds/, rs/, job/, cj/ too)
      kubectl gpudoctor scan [-n NS | -A]   every unhealthy GPU pod, grouped by root cause
      kubectl gpudoctor node <node>         can this node run GPU pods?
      kubectl gpudoctor nodes [--health]    the GPU fleet: free GPUs, nodes that cannot run GPU pods
      kubectl gpudoctor rules [ID]          the rule catalogue, or one rule explained
      kubectl gpudoctor bundle <pod|kind/name> -f out.tgz   collect the evidence to share
      kubectl gpudoctor --from PATH         saved files: a dir, .tgz, YAML, -

    Exit codes: 0 no critical finding, 1 problem diagnosed, 2 usage error or bad input,
    3 could not diagnose (cluster unreachable, unauthorized, timeout), 130 interrupted.
    """
    ctx.obj = flags
    if ctx.invoked_subcommand is None:
        if flags.get("source"):
            ctx.exit(_diagnose(ctx, "saved", None, flags))
        click.echo(ctx.get_help())


@main_group.command(context_settings=CONTEXT)
@click.argument("pod_name", metavar="POD", required=False)
@_common
@click.pass_context
def pod(ctx, pod_name, **flags):
    """Diagnose a pod: why it is Pending, not starting, crashing, evicted or cut off."""
    merged = _merge(ctx, flags)
    if not pod_name and not merged.get("source"):
        raise click.UsageError("a pod name is required (or --from PATH)")
    ctx.exit(_diagnose(ctx, "pod", pod_name, merged))


@main_group.command(context_settings=CONTEXT)
@click.argument("node_name", metavar="NODE", required=False)
@_common
@click.pass_context
def node(ctx, node_name, **flags):
    """Diagnose a node: can it run GPU pods (device plugin, GPU operator, MIG, health)?"""
    merged = _merge(ctx, flags)
    if not node_name and not merged.get("source"):
        raise click.UsageError("a node name is required (or --from PATH)")
    ctx.exit(_diagnose(ctx, "node", node_name, merged))


@main_group.command(context_settings=CONTEXT)
@click.argument("node_name", metavar="[NODE]", required=False)
@click.option("--health", is_flag=True, default=False, help="Also read each GPU node's dcgm-exporter metrics.")
@_common
@click.pass_context
def nodes(ctx, node_name, health, **flags):
    """The GPU fleet: per node GPUs allocatable/used/free, driver, state; free GPUs by model; nodes that cannot run
    GPU pods, by cause. (`nodes NODE` is `node NODE`, as kubectl reads it.)"""
    merged = _merge(ctx, flags)
    if node_name:
        ctx.exit(_diagnose(ctx, "node", node_name, merged))
    from . import command
    ctx.exit(command.fleet(merged, health))


@main_group.command(context_settings=CONTEXT)
@click.argument("ref", metavar="KIND/NAME")
@_common
@click.pass_context
def workload(ctx, ref, **flags):
    """Diagnose a workload's pods: deploy/x, sts/x, ds/x, rs/x, job/x, cj/x (and why pods are not even created)."""
    from .kube.workloads import parse_ref
    parsed = parse_ref(ref)
    if not parsed:
        raise click.UsageError(f"{ref}: expected KIND/NAME with KIND one of deploy, sts, ds, rs, job, cronjob")
    ctx.exit(_diagnose(ctx, "workload", parsed, _merge(ctx, flags)))


@main_group.command(context_settings=CONTEXT)
@_common
@click.pass_context
def scan(ctx, **flags):
    """Every unhealthy GPU pod in the namespace (-A: the cluster), grouped by root cause."""
    ctx.exit(_diagnose(ctx, "scan", None, _merge(ctx, flags)))


@main_group.command(context_settings=CONTEXT)
@click.argument("target", metavar="POD | KIND/NAME", nargs=-1, required=True)
@click.option("-f", "--file", "dest", required=True, metavar="PATH", help="Write here: out.tgz, or a directory.")
@_common
@click.pass_context
def bundle(ctx, target, dest, **flags):
    """Collect a pod's or workload's evidence into a bundle to share (Secrets as metadata only; diagnose it with
    --from, which gives the same verdict)."""
    from .offline import bundle as bundle_writer
    from .runner import bundle_evidence
    from .targets import TargetError, resolve

    merged = _merge(ctx, flags)
    if merged.get("output") not in (None, "text"):
        raise click.UsageError(f"bundle writes files, not a report: -o {merged['output']} does not apply "
                               f"(diagnose the bundle with: kubectl gpudoctor --from PATH -o {merged['output']})")
    try:
        found = resolve(list(target)) or ("pod", target[0], list(target[1:]))
    except TargetError as exc:
        raise click.UsageError(str(exc))
    if found[2] or found[0] == "node":
        raise click.UsageError(f"bundle takes one pod or workload (KIND/NAME), not {' '.join(target)}")
    from .command import options
    ev = bundle_evidence(options(merged), found[0], found[1])
    path = bundle_writer.write(ev, dest)
    click.echo(f"wrote {path} ({len(ev.logs)} logs, {sum(len(v) for v in ev.objects.values())} objects, "
               f"{len(ev.gaps)} gaps); diagnose it with: kubectl gpudoctor --from {path}", err=True)


@main_group.command(context_settings=CONTEXT)
@click.argument("rule_id", metavar="[ID]", required=False)
@click.option("-o", "--output", type=click.Choice(OUTPUTS + ("markdown",)), default=None,
              help="Output format (markdown: a rule's docs section as published).")
@click.pass_context
def rules(ctx, rule_id, output):
    """List the rule catalogue (id, phase, severity, title); with an ID, explain that rule: when it fires, the fix,
    an example (the text of its published docs page)."""
    from .runner import rule_rows
    output = output or (ctx.obj or {}).get("output") or "text"
    width, color = _terminal(ctx, output)
    if rule_id:
        from .render.ruledocs import explain, explain_text
        from .rules import RULES
        if rule_id not in RULES:
            raise click.UsageError(f"{rule_id}: no such rule (see `kubectl gpudoctor rules`)")
        click.echo(explain(rule_id) if output == "markdown" else explain_text(rule_id, width, color), nl=False)
        return
    rows = rule_rows()
    if output in ("text", "wide", "markdown"):
        from .render.text import table_lines
        click.echo("\n".join(table_lines(rows, width)))
    else:
        from .render import structured
        doc = {"apiVersion": "gpudoctor/v1", "kind": "RuleList", "items": rows}
        click.echo(structured.to_json(doc) if output == "json" else structured.to_yaml(doc), nl=False)


def _terminal(ctx, output: str):
    """(width, color) of a text answer on this stdout: no width for -o wide or a pipe."""
    from .render.style import want_color
    from .render.wrap import terminal_width
    isatty = sys.stdout.isatty()
    color = want_color((ctx.obj or {}).get("color") or "auto", "text" if output == "markdown" else output, isatty)
    return (None if output == "wide" else terminal_width(isatty)), color and output != "markdown"


@main_group.command(name="help", context_settings=CONTEXT)
@click.argument("command", required=False)
@click.pass_context
def help_(ctx, command):
    """Show help for the plugin or for one command (same as `<command> --help`)."""
    group = ctx.parent.command
    sub = group.get_command(ctx.parent, command) if command else None
    if command and sub is None:
        raise click.UsageError(f"no such command: {command}")
    if sub is None:
        click.echo(ctx.parent.get_help())
    else:
        click.echo(sub.get_help(click.Context(sub, info_name=command, parent=ctx.parent)))


@main_group.command(context_settings=CONTEXT)
def version():
    """Print the version."""
    click.echo(f"kubectl-gpudoctor {__version__}")


def _merge(ctx, flags) -> dict:
    """Subcommand flags win; flags given before the subcommand fill the rest."""
    parent = dict((ctx.parent.obj or {}) if ctx.parent else {})
    for key, value in flags.items():
        if value not in (None, False, ()):
            parent[key] = value
        else:
            parent.setdefault(key, value)
    return parent


def _diagnose(ctx, what: str, target, flags) -> int:
    from . import command
    return command.diagnose(what, target, flags)


def main(argv=None) -> None:
    """Entry point: one line on stderr and the contract's exit code for every failure, never a traceback."""
    from . import command
    from .targets import split_short_equals
    try:
        args = split_short_equals(sys.argv[1:] if argv is None else argv)
        code = main_group.main(args=args, prog_name="kubectl gpudoctor", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.UsageError as exc:
        code = command.failure(command.UsageError(exc.format_message()))
    except click.Abort:   # click turns Ctrl-C into Abort
        code = command.failure(KeyboardInterrupt())
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 — the last line of defence for a one-line error
        code = command.failure(exc)
    code = int(code) if isinstance(code, int) else int(Exit.OK)
    if argv is None:   # the installed command (tests call main(argv) and catch SystemExit)
        command.exit_now(code)
    sys.exit(code)
