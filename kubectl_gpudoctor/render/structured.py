"""JSON and YAML renderings of the contract's document; never colored."""
from __future__ import annotations

import json

import yaml

from ..safety.sanitize import escape_json_unsafe


def _doc(obj) -> dict:
    return obj if isinstance(obj, dict) else obj.to_dict()


def to_json(obj) -> str:
    return escape_json_unsafe(json.dumps(_doc(obj), indent=2, ensure_ascii=False)) + "\n"


def to_yaml(obj) -> str:
    return yaml.safe_dump(_doc(obj), sort_keys=False, allow_unicode=True, width=120)
