"""Renders the krew-release-bot template (krew-manifest.yaml) into a krew Plugin manifest.

    python packaging/manifest.py -o plugin.yaml                       # the repository's plugin.yaml
    python packaging/manifest.py --archives dist --strict -o dist/plugin.yaml   # a release with all archives

It understands exactly the template syntax krew-release-bot gives (rajatjindal/krew-release-bot,
pkg/source/template.go): `{{ .TagName }}`, and `{{ addURIAndSha "URL" .TagName }}`, where URL may itself use
`{{ .TagName }}` and `{{ .Version }}` (the tag's digits, e.g. 0.1.0) and the call becomes
`uri: URL` + newline + 4 spaces + `sha256: <hex>`. Anything else inside `{{ }}` is an error, so the template
cannot drift into syntax this renderer (and so the tests) would not check.

A checksum comes from a local archive whose file name is the URL's last segment; without one it is the
placeholder (the sha256 of no bytes, e3b0c442…) unless --strict. plugin.yaml in the repository carries placeholders until a release
builds the archives; packaging/build.sh writes dist/plugin.yaml with the real checksum of the archive it built.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path
from typing import Callable, Dict, Iterable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TEMPLATE = ROOT / "krew-manifest.yaml"
# sha256 of zero bytes: a well-formed digest that no archive has, so a manifest holding it installs nothing.
PLACEHOLDER = hashlib.sha256(b"").hexdigest()
HEADER = ("# krew Plugin manifest for this version, rendered from krew-manifest.yaml by packaging/manifest.py.\n"
          "# A sha256 of e3b0c442…b855 (the digest of no bytes) is a placeholder until the release archives\n"
          "# exist; packaging/build.sh writes dist/plugin.yaml with the checksum of the archive it built.\n")

_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)
_ADD = re.compile(r'^addURIAndSha\s+"((?:[^"\\]|\\.)*)"\s+\.TagName$')


def tag_version(tag: str) -> str:
    """What the bot passes as .Version: the first run of dotted digits in the tag."""
    m = re.search(r"\d+(\.\d+)+", tag)
    return m.group(0) if m else tag


def _inner(url: str, tag: str) -> str:
    values = {".TagName": tag, ".Version": tag_version(tag)}

    def sub(m):
        if m.group(1) not in values:
            raise ValueError(f"unsupported template action in URL: {{{{ {m.group(1)} }}}}")
        return values[m.group(1)]
    return _ACTION.sub(sub, url)


def render(template: str, tag: str, checksum: Callable[[str], str]) -> str:
    """The template with `tag` as the release tag; checksum(url) gives each asset's sha256."""
    out, pos = [], 0
    while True:
        start = template.find("{{", pos)
        if start < 0:
            out.append(template[pos:])
            break
        out.append(template[pos:start])
        end = _find_close(template, start)
        action = template[start + 2:end].strip().strip("-").strip()
        pos = end + 2
        if action == ".TagName":
            out.append(tag)
            continue
        m = _ADD.match(action)
        if not m:
            raise ValueError(f"unsupported template action: {{{{ {action} }}}}")
        url = _inner(m.group(1).replace('\\"', '"'), tag)
        out.append(f"uri: {url}\n    sha256: {checksum(url)}")
    return "".join(out)


def _find_close(text: str, start: int) -> int:
    """Index of the `}}` closing the action at `start` (a quoted URL may hold its own {{ }})."""
    i, in_str = start + 2, False
    while i < len(text) - 1:
        c = text[i]
        if c == '"' and text[i - 1] != "\\":
            in_str = not in_str
        elif not in_str and text.startswith("}}", i):
            return i
        i += 1
    raise ValueError(f"unclosed template action at offset {start}")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def local_checksums(archives: Iterable[Path], strict: bool = False) -> Callable[[str], str]:
    known: Dict[str, str] = {Path(a).name: sha256_file(Path(a)) for a in archives}

    def checksum(url: str) -> str:
        name = url.rsplit("/", 1)[-1]
        if name in known:
            return known[name]
        if strict:
            raise SystemExit(f"manifest.py: no archive named {name} for {url}")
        return PLACEHOLDER
    return checksum


def render_file(tag: str, checksum: Callable[[str], str], template: Path = TEMPLATE, header: bool = True) -> str:
    return (HEADER if header else "") + render(template.read_text(encoding="utf-8"), tag, checksum)


def main(argv=None) -> None:
    sys.path.insert(0, str(HERE))
    from pack import version  # packaging/pack.py

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tag", default=None, help="release tag (default: v + kubectl_gpudoctor.__version__)")
    parser.add_argument("--archives", type=Path, help="directory holding the release archives")
    parser.add_argument("--strict", action="store_true", help="fail unless every platform's archive is there")
    parser.add_argument("--no-header", action="store_true", help="omit the explanatory comment")
    parser.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    args = parser.parse_args(argv)
    tag = args.tag or f"v{version()}"
    archives = sorted(p for p in (args.archives.iterdir() if args.archives else [])
                      if p.name.endswith((".tar.gz", ".zip")))
    text = render_file(tag, local_checksums(archives, args.strict), header=not (args.no_header or args.strict))
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
