"""The installed command's entry point: `--version` and the top-level `--help` answer before click and the CLI
load (scripts, krew and first-time users call them most), and so does a plain pod diagnosis (quickargs.py reads
its flags); every other command line goes to click (cli.py)."""
import sys

from . import __version__

MAX_CONTENT_WIDTH = 100   # cli.CONTEXT's: click wraps help at min(terminal columns, this) - 2


def main() -> None:
    args = sys.argv[1:]
    if args in (["--version"], ["version"]):
        _print(f"kubectl-gpudoctor {__version__}\n")
    if args in (["--help"], ["-h"]):
        text = _saved_help()
        if text is not None:
            _print(text)
    # A diagnosis is a short-lived process whose objects reference counting frees; the cyclic collector would
    # only walk, again and again, the ~100,000 objects that importing the rules creates. scan, which reads page
    # after page for minutes, turns it back on (runner.scan).
    import gc
    gc.disable()
    from .quickargs import parse
    from .targets import split_short_equals
    quick = parse(split_short_equals(args))
    if quick is not None:
        _pod(*quick)
    from .cli import main as run
    run()


def _pod(pod: str, flags: dict) -> None:
    """A pod diagnosis as cli.py's `pod` command runs it, never returning: the same report, errors and exit code."""
    from . import command
    try:
        code = command.diagnose("pod", pod, flags)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 — the last line of defence for a one-line error
        code = command.failure(exc)
    command.exit_now(int(code))


def _saved_help():
    """click's own help text for this terminal's width, saved by render/helpcache.py; None for other widths."""
    import shutil
    from .helptext import BY_WIDTH
    return BY_WIDTH.get(max(min(shutil.get_terminal_size().columns, MAX_CONTENT_WIDTH) - 2, 50))


def _print(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
    sys.exit(0)
