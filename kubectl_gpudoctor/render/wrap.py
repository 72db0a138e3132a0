"""Wraps report prose to the terminal width, keeping its indentation; commands and snippets are never wrapped."""
from __future__ import annotations

import os
import shutil
import textwrap
from typing import List, Mapping, Optional

MIN_WIDTH = 40   # narrower than this, wrapping hurts more than it helps


def terminal_width(isatty: bool, env: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """COLUMNS when set, else the terminal's width on a terminal; None (no wrapping) in a pipe, as for a file."""
    env = os.environ if env is None else env
    cols = (env.get("COLUMNS") or "").strip()
    if cols.isdigit():
        return max(int(cols), MIN_WIDTH)
    if isatty:
        return max(shutil.get_terminal_size((100, 24)).columns, MIN_WIDTH)
    return None


def fill(text: str, first: str, width: Optional[int], rest: Optional[str] = None) -> List[str]:
    """`first` + text as lines of at most `width` characters (later lines indented by `rest`, default `first`);
    one line when width is None. Words longer than a line (URLs, paths) are kept whole."""
    if not width or len(first) + len(text) <= width:
        return [first + text]
    return textwrap.wrap(text, width=width, initial_indent=first, subsequent_indent=first if rest is None else rest,
                         break_long_words=False, break_on_hyphens=False) or [first]
