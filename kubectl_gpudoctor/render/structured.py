"""JSON and YAML renderings of the contract's document; never colored."""
from __future__ import annotations

import json
from functools import lru_cache

from ..safety.sanitize import UNSAFE_UNICODE, escape_json_unsafe


def _doc(obj) -> dict:
    return obj if isinstance(obj, dict) else obj.to_dict()


def to_json(obj) -> str:
    return escape_json_unsafe(json.dumps(_doc(obj), indent=2, ensure_ascii=False)) + "\n"


@lru_cache(maxsize=None)
def _dumper():
    """PyYAML's SafeDumper, loaded only for -o yaml."""
    import yaml

    class Dumper(yaml.SafeDumper):
        """allow_unicode keeps "—" readable, but PyYAML counts the bidirectional overrides as printable: a scalar
        holding one is written double-quoted with every non-ASCII character escaped (\u202E), never raw."""

        def analyze_scalar(self, scalar):
            analysis = super().analyze_scalar(scalar)
            if UNSAFE_UNICODE.search(scalar):
                analysis.allow_flow_plain = analysis.allow_block_plain = False
                analysis.allow_single_quoted = analysis.allow_block = False
            return analysis

        def write_double_quoted(self, text, split=True):
            keep = self.allow_unicode
            self.allow_unicode = keep and not UNSAFE_UNICODE.search(text)
            try:
                super().write_double_quoted(text, split)
            finally:
                self.allow_unicode = keep

    return Dumper


def to_yaml(obj) -> str:
    import yaml
    return yaml.dump(_doc(obj), Dumper=_dumper(), sort_keys=False, allow_unicode=True, width=120)
