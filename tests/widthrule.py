"""The width rule of a text report fitted to a terminal: no line wider than the terminal, except a line of a YAML
snippet (printed as written so that it pastes into a manifest) or a single word longer than a whole line that
cannot be split without breaking it (an address, a command's one argument, continued with ` \\`)."""
import json
import shlex

from kubectl_gpudoctor.render.wrap import width_of


def snippet_lines(doc) -> set:
    """The stripped lines of every snippet in a -o json document (a workload's and a scan's items too)."""
    out = set()
    for f in doc.get("findings") or []:
        out.update(line.strip() for line in (f.get("snippet") or "").splitlines())
    for item in doc.get("items") or []:
        out |= snippet_lines(item)
    return out


def too_wide(text: str, width: int, snippets=frozenset()) -> list:
    """The lines of `text` that break the rule."""
    bad = []
    for line in text.splitlines():
        if width_of(line) <= width:
            continue
        body = line.strip()
        if body in snippets and not body.startswith("kubectl "):
            continue
        if _one_word(body.removesuffix(" \\")):
            continue
        bad.append(line)
    return bad


def _one_word(text: str) -> bool:
    """One word, as the shell reads it (a quoted argument with spaces is one word)."""
    try:
        return len(shlex.split(text, comments=False)) == 1
    except ValueError:   # an unbalanced quote: not one word
        return False


def load_json(text: str):
    return json.loads(text)
