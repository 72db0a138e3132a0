"""Which characters the sanitiser escapes, checked over every code point against an independent statement of the
rule: Unicode's own categories for the controls (Cc) and separators (Zl, Zp), and the characters Unicode lists as
Bidi_Control, zero-width or invisible (UAX #9; PropList.txt), written out here, not read from the sanitiser."""
import sys
import unicodedata

from kubectl_gpudoctor.safety.sanitize import escape_json_unsafe, inert

BIDI_CONTROL = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}   # PropList Bidi_Control
ZERO_WIDTH = {0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF}                          # ZWSP, ZWNJ, ZWJ, word joiner, BOM
INVISIBLE_OPERATORS = {0x2061, 0x2062, 0x2063, 0x2064, 0x2065}                 # function application … (and U+2065)
ANNOTATION = {0xFFF9, 0xFFFA, 0xFFFB}                                          # interlinear annotation controls
SHOWN_AS_IS = {0x09, 0x0A}                                                     # tab and newline keep their meaning


def _escaped_by_spec(cp: int) -> bool:
    ch = chr(cp)
    if cp in SHOWN_AS_IS:
        return False
    return (unicodedata.category(ch) in ("Cc", "Zl", "Zp") or cp in BIDI_CONTROL | ZERO_WIDTH | INVISIBLE_OPERATORS
            | ANNOTATION)


def test_inert_escapes_exactly_the_controls_and_invisible_characters_of_every_code_point():
    wrong = [cp for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF
             and (inert(chr(cp)) != chr(cp)) != _escaped_by_spec(cp)]
    assert not wrong, [f"U+{cp:04X} {unicodedata.name(chr(cp), '?')}" for cp in wrong[:20]]


def test_an_escape_names_the_code_point():
    assert inert("\x1b[31m") == "\\x1b[31m" and inert("\x9b") == "\\x9b" and inert("\u202e") == "\\u202e"
    assert inert("a\nb", multiline=False) == "a\\nb" and inert("a\tb") == "a\tb" and inert(None) == ""


def test_json_and_yaml_escape_the_c1_controls_and_invisible_characters_too():
    # JSON escapes C0 itself; what it would write raw is DEL, C1 and the invisible characters
    for cp in range(0x20, 0x10000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        escaped = escape_json_unsafe(chr(cp)) != chr(cp)
        assert escaped == (_escaped_by_spec(cp) and cp >= 0x7F), f"U+{cp:04X}"
    assert escape_json_unsafe("\u2028") == "\\u2028"


def _nested(depth, leaf):
    doc = leaf
    for i in range(depth):
        doc = {"k": doc} if i % 2 else [doc]
    return doc


def _leaf(doc):
    while isinstance(doc, (dict, list)):
        doc = doc["k"] if isinstance(doc, dict) else doc[0]
    return doc


def test_a_report_is_neutralised_to_its_depth_bound_and_cut_below_it():
    from kubectl_gpudoctor.safety.sanitize import MAX_DEPTH, neutral
    assert _leaf(neutral(_nested(MAX_DEPTH, "\x1b]0;x\x07"))[0]) == "\\x1b]0;x\\x07"
    assert _leaf(neutral(_nested(MAX_DEPTH + 1, "\x1b]0;x\x07"))[0]) == "…"   # never passed on raw
    doc, masked = neutral({"a": "token hf_" + "a" * 34, "b": ["token hf_" + "a" * 34], "n": 3, "z": None})
    assert masked == 2 and doc["n"] == 3 and doc["z"] is None and "hf_" not in doc["a"] + doc["b"][0]


def test_a_dict_at_the_depth_bound_keeps_neither_its_keys_nor_its_values():
    """A key lies one level below its dict, as its value does: past the bound both are cut (a report never
    nests this deep; what does is cut, never passed on)."""
    from kubectl_gpudoctor.safety.sanitize import MAX_DEPTH, neutral
    doc = "leaf"
    for _ in range(MAX_DEPTH + 1):
        doc = {"\x1b[2Jk": doc}
    out = neutral(doc)[0]
    for _ in range(MAX_DEPTH):
        assert list(out) == ["\\x1b[2Jk"]
        out = out["\\x1b[2Jk"]
    assert out == {"…": "…"}


def test_records_are_neutralised_field_by_field_to_the_depth_bound_and_cut_below_it():
    from kubectl_gpudoctor.record import record
    from kubectl_gpudoctor.safety.sanitize import MAX_DEPTH, neutral

    @record
    class Part:
        message: str
        inner: object = None

    def chain(n):
        doc = Part("\x1b]0;owned\x07")
        for _ in range(n):
            doc = Part("ok", doc)
        return doc

    def deepest(doc):
        while isinstance(doc.inner, Part):
            doc = doc.inner
        return doc

    assert deepest(neutral(chain(MAX_DEPTH - 1))[0]).message == "\\x1b]0;owned\\x07"   # the message at depth 50
    assert deepest(neutral(chain(MAX_DEPTH))[0]).message == "…"                        # at 51: cut
    assert neutral(chain(3))[0].inner.message == "ok"


def test_lists_and_tuples_alone_reach_the_depth_bound_too():
    from kubectl_gpudoctor.safety.sanitize import MAX_DEPTH, neutral
    for kind in (list, tuple):
        doc = "\x1b]0;owned\x07"
        for _ in range(MAX_DEPTH):
            doc = kind([doc])
        out = neutral(doc)[0]
        deeper = neutral(kind([doc]))[0]
        for _ in range(MAX_DEPTH):
            assert type(out) is kind and type(deeper) is kind
            out, deeper = out[0], deeper[0]
        assert out == "\\x1b]0;owned\\x07" and deeper == kind(["…"])


def test_values_that_are_neither_text_nor_containers_pass_as_they_are():
    from enum import Enum

    from kubectl_gpudoctor.record import record
    from kubectl_gpudoctor.safety.sanitize import neutral

    @record
    class Part:
        message: str

    class Health(Enum):
        FAILING = "failing"

    doc = {"type": Part, "health": Health.FAILING, "raw": b"\x1b[2J", "ids": frozenset({1}), "ok": True, "n": 1.5}
    out = neutral(doc)[0]
    assert out == doc and out["type"] is Part and out["health"] is Health.FAILING
