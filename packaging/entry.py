"""Entry point of the frozen binary: `kubectl-gpudoctor …` runs the CLI; `kubectl-gpudoctor __complete …` answers
shell completion (the archive's kubectl_complete-gpudoctor shim calls it, since krew links one binary only)."""
import sys


def _run() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "__complete":
        from kubectl_gpudoctor.completion import main as complete
        complete(sys.argv[2:])
    else:
        from kubectl_gpudoctor.launch import main
        main()


if __name__ == "__main__":
    _run()
