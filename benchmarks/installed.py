"""A regular install of this tree in a throwaway venv, laid out as `pip install` leaves it, for the benchmarks to time.

An editable install is not what users run: its import hook costs every start, and with PYTHONDONTWRITEBYTECODE
set (as on these machines) every run recompiles all modules, about 0.1 s. pip compiles the bytecode of a regular
install when it installs, so this copy is compiled once here. Dependencies come from the running environment.
"""
import compileall
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "kubectl_gpudoctor"
# The same script pip writes for a console_scripts entry point.
SCRIPT = """#!{python}
import re
import sys
from kubectl_gpudoctor.launch import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""


def install(dest: str = None) -> str:
    """Path of the `kubectl-gpudoctor` command of a fresh regular install of the current sources."""
    venv = Path(dest or tempfile.mkdtemp(prefix="gpudoctor-bench-install-"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # The dependencies (click, kubernetes, ...) of the environment running the benchmark; a path from a .pth
    # line is added as is, so that environment's own editable-install hook does not come with it.
    (site / "zz-benchmark-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    shutil.copytree(ROOT / PACKAGE, site / PACKAGE, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if not compileall.compile_dir(str(site / PACKAGE), quiet=1):
        sys.exit("compileall failed on the installed copy")
    script = venv / "bin" / "kubectl-gpudoctor"
    script.write_text(SCRIPT.format(python=python))
    script.chmod(0o755)
    return str(script)


if __name__ == "__main__":
    print(install(sys.argv[1] if len(sys.argv) > 1 else None))
