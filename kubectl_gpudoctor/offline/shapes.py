"""Checks that a bundle's own header (bundle.yaml) has the shapes this tool writes; the objects' shapes are
checked one by one, live and offline alike, by kube/shapes.py."""
from __future__ import annotations

from ..kube.shapes import _dotted, _described, _fits, _values, _WORDS
from .files import OfflineError

BUNDLE = {"collectedAt": "time", "target": "map", "target.kind": "str", "target.name": "str",
          "target.namespace": "str", "sources": "list", "sources[]": "str", "gaps": "list", "gaps[]": "map",
          "gaps[].source": "str", "gaps[].reason": "str", "gaps[].detail": "str", "gaps[].verb": "str", "gaps[].key": "str",
          "gaps[].namespace": "str",
          "absent": "list", "absent[]": "str", "tailLines": "count", "podNodes": "list", "podNodes[]": "str",
          "notCollected": "list", "notCollected[]": "str"}


def check_meta(meta, path: str) -> None:
    """Raise OfflineError naming the first field of bundle.yaml whose type or value this tool never writes."""
    if not isinstance(meta, dict):
        raise OfflineError(f"--from {path}: bundle.yaml: expected a mapping, found {_described(meta)}")
    for spec_path, want in BUNDLE.items():
        item = spec_path.endswith(("[]", "{}"))
        for where, value in _values(meta, spec_path):
            if (value is not None or item) and not _fits(value, want):
                raise OfflineError(f"--from {path}: bundle.yaml: {_dotted(where)} is {_described(value)}, "
                                   f"not {_WORDS[want]}")
