"""A diagnosis command from parsed flags to the printed report and its exit code, without click: click's commands
(cli.py) and the quick path for a plain pod diagnosis (launch.py, quickargs.py) both end here."""
from __future__ import annotations

import os
import re
import sys

from .exitcodes import Exit


LEVEL = re.compile(r"[-+]?[0-9]+")


class UsageError(Exception):
    """A flag value only checked here (--ignore, --request-timeout): exit 2, as click's own usage errors."""


def options(flags: dict):
    from .collect.kubeconfig import ConnOptions
    from .kube.timeutil import parse_duration
    from .runner import Options

    if flags.get("ignore"):   # the rules load only when asked: a diagnosis loads them while its requests run
        from .rules import RULES
        unknown = [i for i in flags["ignore"] if i not in RULES]
        if unknown:
            raise UsageError(f"--ignore {unknown[0]}: no such rule (see `kubectl gpudoctor rules`)")
    try:
        timeout = parse_duration(flags.get("request_timeout") or "10s")
    except ValueError as exc:
        raise UsageError(f"--request-timeout: {exc}")
    level = flags.get("log_level")
    if level is not None and not LEVEL.fullmatch(level):   # kubectl's -v is a number (its log level)
        raise UsageError(f'invalid argument "{level}" for "-v, --v" flag: expected a number')
    conn = ConnOptions(kubeconfig=flags.get("kubeconfig"), context=flags.get("context"), cluster=flags.get("cluster"),
                       user=flags.get("user"), namespace=flags.get("namespace"), request_timeout=timeout or None,
                       all_namespaces=bool(flags.get("all_namespaces")), as_user=flags.get("as_user"),
                       as_groups=tuple(flags.get("as_groups") or ()), token=flags.get("token"),
                       server=flags.get("server"), ca_file=flags.get("ca_file"), insecure=bool(flags.get("insecure")),
                       as_uid=flags.get("as_uid"), username=flags.get("username"), password=flags.get("password"),
                       client_certificate=flags.get("client_certificate"), client_key=flags.get("client_key"),
                       tls_server_name=flags.get("tls_server_name"),
                       disable_compression=bool(flags.get("disable_compression")))
    return Options(conn=conn, output=flags.get("output") or "text", color=flags.get("color") or "auto",
                   source=flags.get("source"), tail=flags.get("tail") or 80, ignore=tuple(flags.get("ignore") or ()),
                   verbose=bool(flags.get("verbose")))


def diagnose(what: str, target, flags: dict) -> int:
    """Runs one diagnosis (pod, node, workload, scan, or "saved": what a bundle was made for), prints its report
    on stdout; the exit code."""
    from . import runner

    opts = options(flags)
    if what == "saved":
        what, target = runner.saved_target(opts)
    if what == "pod":
        diag = runner.pod_diagnosis(opts, target)
    elif what == "node":
        diag = runner.node_diagnosis(opts, target)
    elif what == "workload":
        diag = runner.workload_diagnosis(opts, *target)
    else:
        diag = runner.scan(opts, bool(flags.get("all_namespaces")))
    from .render import render
    from .render.style import want_color
    from .render.wrap import terminal_width
    color = want_color(opts.color, opts.output, sys.stdout.isatty())
    if color:
        import colorama
        colorama.just_fix_windows_console()
    width = terminal_width(sys.stdout.isatty())
    sys.stdout.write(render(diag, opts.output, color=color, verbose=opts.verbose, width=width))
    sys.stdout.flush()
    return int(diag.exit_code)


def fleet(flags: dict, health: bool) -> int:
    """`nodes`: the fleet report on stdout (text, json or yaml); its exit code."""
    from . import runner
    from .render.style import want_color
    opts = options(flags)
    report = runner.fleet_report(opts, health)
    if opts.output in ("json", "yaml"):
        from .render import structured
        doc = report.to_dict()
        sys.stdout.write(structured.to_json(doc) if opts.output == "json" else structured.to_yaml(doc))
    else:
        from .render.fleet import to_text
        sys.stdout.write(to_text(report, color=want_color(opts.color, opts.output, sys.stdout.isatty())))
    sys.stdout.flush()
    return int(report.exit_code)


def failure(exc: BaseException) -> int:
    """The exit code of an exception that ended a command, its one-line message printed; re-raised for a bug when
    GPUDOCTOR_STRICT is set, and for anything when GPUDOCTOR_DEBUG is (never a traceback otherwise)."""
    if isinstance(exc, UsageError):
        fail(f"{exc} (see 'kubectl gpudoctor --help')")
        return Exit.USAGE
    if isinstance(exc, KeyboardInterrupt):
        fail("interrupted")
        return Exit.INTERRUPTED
    if isinstance(exc, BrokenPipeError):
        sys.stderr.close()  # the reader went away (| head): not an error worth a message
        return Exit.OK
    from .runner import classify
    known = classify(exc)
    if os.environ.get("GPUDOCTOR_DEBUG") or (known is None and os.environ.get("GPUDOCTOR_STRICT")):
        raise exc
    if known:
        code, message = int(known[0]), known[1]
    else:
        code, message = Exit.UNDIAGNOSABLE, f"internal error: {type(exc).__name__}: {exc} (set GPUDOCTOR_DEBUG=1 for details)"
    fail(message)
    return code


def fail(message: str) -> None:
    from .safety.sanitize import inert
    sys.stderr.write(f"error: {inert(message, False)}\n")
    sys.stderr.flush()


def exit_now(code: int) -> None:
    """Flush, run the atexit handlers (the kubernetes library removes its temporary credential files there), then
    leave without the interpreter's teardown, which frees every module and object one by one for nothing."""
    import atexit
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # the reader went away, or the stream is closed: nothing more to say
            pass
    atexit._run_exitfuncs()
    os._exit(code)
