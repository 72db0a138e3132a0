"""Wraps report prose to the terminal width, keeping its indentation; commands and snippets are never wrapped."""
from __future__ import annotations

import os
import sys
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
        return max(_columns() or 100, MIN_WIDTH)
    return None


def _columns() -> int:
    """The terminal's width, 0 when unknown (shutil.get_terminal_size's reading, without importing shutil, which
    loads the compression modules: ~3 ms of every diagnosis)."""
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, ValueError, OSError):   # no stdout, a closed or detached one, not a terminal
        return 0


def fill(text: str, first: str, width: Optional[int], rest: Optional[str] = None) -> List[str]:
    """`first` + text as lines of at most `width` characters (later lines indented by `rest`, default `first`);
    one line when width is None. Words longer than a line (URLs, paths) are kept whole."""
    if not width or len(first) + len(text) <= width:
        return [first + text]
    return textwrap.wrap(text, width=width, initial_indent=first, subsequent_indent=first if rest is None else rest,
                         break_long_words=False, break_on_hyphens=False) or [first]
