"""Turns a Diagnosis into text, JSON or YAML; renderers decide nothing."""
from __future__ import annotations

from ..safety.sanitize import neutral
from .structured import to_json, to_yaml
from .text import masked_note, scan_text, to_text

__all__ = ["to_json", "to_yaml", "to_text", "render"]


def render(doc, output: str, color: bool = False, verbose: bool = False, width=None) -> str:
    """`wide` is the text report with every line whole.

    Every string of the document passes one neutraliser first (credentials masked; control characters
    made inert for text, escaped by the format for JSON and YAML)."""
    doc, masked = neutral(doc, escape=output in ("text", "wide"))
    if output == "json":
        return to_json(doc)
    if output == "yaml":
        return to_yaml(doc)
    if output == "wide":   # every line whole, whatever the terminal: quoted lines uncut, tables with every column
        width = None
    if type(doc).__name__ == "ScanReport":
        return scan_text(doc, color=color, verbose=verbose, width=width, wide=output == "wide") + masked_note(masked)
    return to_text(doc, color=color, verbose=verbose, width=width) + masked_note(masked)
