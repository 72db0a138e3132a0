"""Tables of the text report: tabulate's plain layout when it fits (or in a pipe); on a narrower terminal, long
text columns fold, then columns are left out in a declared order, and the report says which."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..safety.sanitize import inert
from .wrap import cut, fill, width_of

GAP = "  "
# Columns whose text folds onto more lines rather than be left out; each keeps at least FOLD_MIN columns.
FOLDS = ("summary", "message", "reason", "title", "heldBy", "requested", "value")
FOLD_MIN = 24
FOLD_FIRST = 32   # folded this far before any column is left out; further only when the rest cannot go
CUT_MIN = 8
# The order in which columns are left out when folding is not enough: first listed, first left out. Columns not
# listed go after these (rightmost first); the first column (the row's name) is never left out.
DROP_ORDER = ("phase", "timeAdded", "since", "restarts", "effect", "container", "capacity", "status", "used",
              "allocatable", "eligible", "type", "namespace", "node", "resource", "ready")


def table(rows: List[dict], width: Optional[int] = None, indent: str = "") -> Tuple[List[str], List[str]]:
    """(lines, headers of the columns left out). With no width, or when it fits, tabulate's plain table."""
    headers = list(rows[0].keys())
    cells = [[inert("-" if r.get(h) is None else r.get(h), False) for h in headers] for r in rows]
    numeric = [all(isinstance(r.get(h), (int, float, type(None))) for r in rows)
               and any(isinstance(r.get(h), (int, float)) for r in rows) for h in headers]
    natural = [max([width_of(h)] + [width_of(str(c[i])) for c in cells]) for i, h in enumerate(headers)]
    if not width or width_of(indent) + sum(natural) + len(GAP) * (len(headers) - 1) <= width:
        plain = [indent + line for line in _tabulate(headers, cells, numeric).splitlines()]
        if not width or max(width_of(line) for line in plain) <= width:
            return plain, []
    keep, widths = _fit(headers, natural, width - width_of(indent))
    out = [indent + GAP.join(_pad(h.upper(), widths[i], numeric[i]) for i, h in enumerate(headers) if i in keep).rstrip()]
    for row in cells:
        columns = {i: _cell(str(row[i]), widths[i], headers[i]) for i in keep}
        for k in range(max(len(v) for v in columns.values())):
            parts = [_pad(columns[i][k] if k < len(columns[i]) else "", widths[i], numeric[i]) for i in keep]
            out.append((indent + GAP.join(parts)).rstrip())
    return out, [h.upper() for i, h in enumerate(headers) if i not in keep]


def _tabulate(headers, cells, numeric) -> str:
    from tabulate import tabulate   # loads importlib.metadata, html, zipfile: only for a report that has a table
    # Only columns of numbers align as numbers: a string like CUDA "11.0" or "1.50" prints as written.
    text_columns = [i for i, n in enumerate(numeric) if not n]
    return tabulate(cells, headers=[h.upper() for h in headers], tablefmt="plain", disable_numparse=text_columns)


def _fit(headers: List[str], natural: List[int], width: int) -> Tuple[List[int], Dict[int, int]]:
    """Which columns are shown, and how wide each is, for the table to fit `width` columns."""
    widths = dict(enumerate(natural))
    keep = list(range(len(headers)))

    def total():
        return sum(widths[i] for i in keep) + len(GAP) * (len(keep) - 1)

    def fold(least):
        for i in [i for i in keep if headers[i] in FOLDS]:
            over = total() - width
            if over > 0:
                widths[i] = max(natural[i] - over, min(natural[i], max(least, width_of(headers[i]))))

    fold(FOLD_FIRST)   # fold text columns first: nothing is lost
    droppable = sorted((i for i in keep[1:] if headers[i] not in FOLDS),
                       key=lambda i: (DROP_ORDER.index(headers[i]) if headers[i] in DROP_ORDER else len(DROP_ORDER), -i))
    while total() > width and droppable:
        keep.remove(droppable.pop(0))
        for i in keep:   # a column left out gives its room back to the folded ones
            if headers[i] in FOLDS:
                widths[i] = natural[i]
        fold(FOLD_FIRST)
    fold(FOLD_MIN)
    over = total() - width
    for i in sorted(keep, key=lambda i: -widths[i]):   # still too wide: cut the widest cells with …
        if over <= 0:
            break
        shrink = min(over, widths[i] - max(CUT_MIN, width_of(headers[i])))
        if shrink > 0:
            widths[i] -= shrink
            over -= shrink
    return keep, widths


def _cell(text: str, width: int, header: str) -> List[str]:
    if width_of(text) <= width:
        return [text]
    return fill(text, "", width) if header in FOLDS else [cut(text, "", width)]


def _pad(text: str, width: int, right: bool) -> str:
    room = " " * max(width - width_of(text), 0)
    return room + text if right else text + room
