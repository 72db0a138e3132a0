"""The log signatures' literal prefilter never hides a match: a regex is skipped only on text that cannot match it."""
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kubectl_gpudoctor.data.log_signatures import SIGNATURES
from kubectl_gpudoctor.logs import scan as logscan
from kubectl_gpudoctor.logs.prefilter import Prefiltered, fold, needles
from tests.conftest import ROOT


@pytest.mark.parametrize("pattern, expected", [
    (r"CUDA error: out of memory", ("cuda error: out of memory",)),
    (r"foo(bar)?baz", ("foo",)),                   # groups are skipped, never read into
    (r"colou?r was", ("r was",)),                  # a quantified character leaves the run
    (r"abc{2}def", ("def",)),                      # {m} is a quantifier of 'c' …
    (r"ab{x}cdef", ("x}cdef",)),                   # … '{' that is no quantifier is skipped, what follows is literal
    (r"ab\.cd*ef", ("ab.c",)),                     # an escaped '.' is the character
    (r"nccl\s+WARN\b.*NET/IB", ("net/ib",)),        # \s \b . break runs
    (r"x[]|a]yz(?:u|v)w", ("yz",)),                # '|' inside a class or group does not split the pattern
    (r"executable file not found|: not found$", ("executable file not found", ": not found")),
    (r"(?i)nccl.?error", ("error",)),
    (r"\x41BC", ("bc",)),                           # a character code is not read as a literal …
    (r"\N{DEGREE SIGN}C ok|\u00e9t\U0001F600é|\12345x", ("c ok", "t", "x")),   # … nor its argument
])
def test_needles_of_each_construct(pattern, expected):
    assert needles(pattern) == expected


@pytest.mark.parametrize("pattern", [
    r"^(?:[A-Z]\w*Error|Exception)$",   # nothing literal outside the group
    r"error|\d+",                       # one alternative without a literal: the pattern always runs
    r"(?x) cuda \s error",              # verbose: spaces are not literal
    r"unbalanced)",
])
def test_no_needles_when_not_safe(pattern):
    assert needles(pattern) is None


def test_fold_is_never_stricter_than_ignorecase():
    """Every character re.IGNORECASE matches to an ASCII letter folds to that letter (Kelvin sign, long s, …)."""
    letter = re.compile("[a-z]", re.I)
    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        if letter.fullmatch(c):
            assert len(fold(c)) == 1 and re.fullmatch(fold(c), c, re.I), f"U+{cp:04X} folds to {fold(c)!r}"


def _flags(sig):
    return 0 if sig.exact_case else re.I


@pytest.mark.parametrize("sig", SIGNATURES, ids=lambda s: s.id)
def test_every_text_a_signature_matches_passes_its_prefilter(sig):
    """Hypothesis writes text holding a match of the signature's own regex (case varied where it is
    case-insensitive); the prefiltered search finds the same match."""
    rx = re.compile(sig.pattern, _flags(sig))

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.from_regex(rx).map(lambda s: s.replace("\n", " ")))
    def check(text):
        plain = rx.search(text)
        found = Prefiltered(sig.pattern, _flags(sig)).search(text)
        assert (found and found.span()) == (plain and plain.span()), text

    check()


def _log_lines():
    for root in ("tests/cases", "tests/realworld", "tests/scenarios"):
        for f in sorted(Path(ROOT, root).glob("**/logs/*/*/*.log")):
            yield from logscan.clean(f.read_text(errors="replace")).split("\n")


def test_every_real_log_line_gets_the_same_answer_with_and_without_the_prefilter():
    lines = list(dict.fromkeys(_log_lines()))
    assert len(lines) > 1000, "the shipped cases hold real logs"
    pairs = [(re.compile(s.pattern, _flags(s)), Prefiltered(s.pattern, _flags(s))) for s in SIGNATURES]
    skipped = 0
    for i in range(len(lines)):
        for text, _, folded in logscan.views(lines, i):
            for rx, pre in pairs:
                plain = rx.search(text)
                assert (pre.search(text, folded) is None) == (plain is None), (rx.pattern, text)
                skipped += plain is None and not any(n in folded for n in (pre._needles or ("",)))
    assert skipped, "the prefilter skipped nothing: it would save nothing"


def test_most_signatures_have_needles():
    """Only patterns whose every alternative starts with a class or group run on every line."""
    missing = [s.id for s in SIGNATURES if needles(s.pattern) is None]
    assert len(missing) <= len(SIGNATURES) // 5, missing
