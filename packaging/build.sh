#!/usr/bin/env bash
# Freeze kubectl-gpudoctor with PyInstaller (onedir) for the platform this runs on and pack the krew archive
#   <out>/kubectl-gpudoctor_<version>_<os>_<arch>.tar.gz   (.zip on Windows)
# plus <archive>.sha256 and <out>/plugin.yaml (the manifest with this archive's checksum). Prints the sha256.
#
#   packaging/build.sh [--out DIR]        default DIR: dist/
#   PYTHON=/path/to/python packaging/build.sh   the interpreter with the package's requirements and
#                                               PyInstaller (pip install '.[dist]'); default: the active
#                                               venv's, else the checkout's .venv/bin/python, else python3
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/dist"
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
# No activated venv needed: the checkout's own .venv (the README's) is found by path.
if [ -n "${PYTHON:-}" ]; then python=$PYTHON
elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then python=$VIRTUAL_ENV/bin/python
elif [ -x "$root/.venv/bin/python" ]; then python=$root/.venv/bin/python
else python=python3
fi
if ! "$python" -c 'import PyInstaller' 2>/dev/null; then
  echo "build.sh: PyInstaller is not installed for $python (pip install '.[dist]')" >&2
  exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/gpudoctor-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "build.sh: freezing kubectl-gpudoctor $("$python" "$root/packaging/pack.py" version) for $("$python" "$root/packaging/pack.py" platform) with $python" >&2
# --clean: no stale cache between builds; the spec sets onedir, the module includes/excludes and strip.
"$python" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$work/dist" --workpath "$work/build" "$root/packaging/kubectl-gpudoctor.spec" >&2
# Stages the onedir build with LICENSE and the completion shim (symlinks dereferenced; fails if any remain),
# smoke-tests the staged binary, writes the archive, its .sha256 and plugin.yaml, and prints the sha256.
"$python" "$root/packaging/pack.py" archive --frozen "$work/dist/kubectl-gpudoctor" --out "$out"
