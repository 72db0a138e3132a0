"""The installed command's entry point: `--version` answers before click and the CLI load (scripts and krew call
it most); every other command runs the CLI."""
import sys

from . import __version__


def main() -> None:
    if sys.argv[1:] in (["--version"], ["version"]):
        sys.stdout.write(f"kubectl-gpudoctor {__version__}\n")
        sys.stdout.flush()
        sys.exit(0)
    from .cli import main as run
    run()
