"""kubectl_gpudoctor/record.py behaves as the dataclasses it replaced: each shape is declared twice, once with
@dataclass and once with @record, and the two are asked the same questions."""
import builtins
import dataclasses
from typing import ClassVar

import pytest
from hypothesis import given, settings, strategies as st

from kubectl_gpudoctor import record as rec


def outcome(fn):
    """What a call gives: ("ok", value) or (exception class name, message)."""
    try:
        return "ok", fn()
    except Exception as exc:
        return type(exc).__name__, str(exc)


def both(name, fields_, frozen=False, methods=None):
    """The same class as a dataclass and as a record. fields_: [(name, "required" | ("default", v) |
    ("factory", f), repr, compare)]; each class gets its own field objects (the decorators take them over)."""
    out = []
    for decorate, field in ((dataclasses.dataclass, dataclasses.field), (rec.record, rec.field)):
        ns = {"__annotations__": {}, **(methods or {})}
        for fname, how, repr_, compare in fields_:
            ns["__annotations__"][fname] = "object"
            kw = {"repr": repr_, "compare": compare}
            if how == "required":
                if not (repr_ and compare):
                    ns[fname] = field(**kw)
            elif how[0] == "default":
                ns[fname] = field(default=how[1], **kw) if not (repr_ and compare) else how[1]
            else:
                ns[fname] = field(default_factory=how[1], **kw)
        out.append(outcome(lambda: decorate(frozen=frozen)(type(name, (), ns))))
    return out


def pair(name, fields_, frozen=False, methods=None):
    (k1, dc), (k2, rc) = both(name, fields_, frozen, methods)
    assert k1 == k2 == "ok", (dc, rc)
    return dc, rc


SHAPE = [("a", "required", True, True), ("b", ("default", "x"), True, True), ("c", ("factory", list), True, True)]
HIDDEN = [("a", "required", True, True), ("secret", ("default", "s"), False, True), ("cache", ("factory", dict), False, False),
          ("note", ("default", 0), True, False)]


def test_defaults_factories_and_class_attributes():
    dc, rc = pair("Shape", SHAPE)
    for cls in (dc, rc):
        one, two = cls(1), cls(2)
        one.c.append("mine")
        assert two.c == [] and one.c is not two.c            # a factory runs per instance
        assert cls.b == "x" and not hasattr(cls, "c")        # a default stays on the class; a factory does not
        assert list(vars(one)) == ["a", "b", "c"]
    assert repr(dc(1, "y", [2])) == repr(rc(1, "y", [2])) == "Shape(a=1, b='y', c=[2])"


def test_repr_false_and_compare_false_fields():
    dc, rc = pair("Hidden", HIDDEN)
    for cls in (dc, rc):
        assert repr(cls(1, "s1", {1: 2}, 5)) == "Hidden(a=1, note=5)"
        assert cls(1, "s", {}, 1) == cls(1, "s", {"other": 1}, 2)   # cache and note are not compared
        assert cls(1, "s", {}, 1) != cls(1, "t", {}, 1)             # secret is, though not shown


def test_frozen_records_refuse_assignment_and_deletion():
    dc, rc = pair("Frozen", SHAPE[:2], frozen=True)
    for attr in ("a", "new"):
        d, r = dc(1), rc(1)
        assert outcome(lambda: setattr(d, attr, 2)) == outcome(lambda: setattr(r, attr, 2)) \
            == ("FrozenInstanceError", f"cannot assign to field {attr!r}")
        assert outcome(lambda: delattr(d, attr)) == outcome(lambda: delattr(r, attr)) \
            == ("FrozenInstanceError", f"cannot delete field {attr!r}")
    assert issubclass(rec.FrozenInstanceError, AttributeError)

    class Sub(rc):   # a plain subclass may add its own attributes, as with dataclasses
        pass
    sub = Sub(1)
    sub.extra = 3
    assert sub.extra == 3 and outcome(lambda: setattr(sub, "a", 2))[0] == "FrozenInstanceError"


def test_hash_frozen_by_compared_fields_mutable_unhashable():
    dc, rc = pair("Hashed", HIDDEN[:2] + [("note", ("default", 0), True, False)], frozen=True)
    assert hash(dc(1, "s", 5)) == hash(rc(1, "s", 5)) == hash((1, "s"))
    assert {rc(1, "s", 5), rc(1, "s", 6)} == {rc(1, "s", 0)}
    dc, rc = pair("Mutable", SHAPE)
    assert dc.__hash__ is None and rc.__hash__ is None
    assert outcome(lambda: hash(dc(1)))[0] == outcome(lambda: hash(rc(1)))[0] == "TypeError"


def test_equality_only_within_one_class():
    _, rc = pair("One", SHAPE[:1])
    _, other = pair("One", SHAPE[:1])
    dc, _ = pair("One", SHAPE[:1])
    assert rc(1) == rc(1) and rc(1) != rc(2)
    assert rc(1) != other(1) and rc(1) != dc(1) and rc(1) != 1
    assert rc(1).__eq__(1) is NotImplemented

    class Sub(rc):
        pass
    assert rc(1) != Sub(1)   # the same class, not a subclass (dataclasses' rule)


def test_replace_and_fields():
    dc, rc = pair("Shape", SHAPE)
    d, r = dc(1, "y", [1]), rc(1, "y", [1])
    assert repr(dataclasses.replace(d, b="z")) == repr(rec.replace(r, b="z")) == "Shape(a=1, b='z', c=[1])"
    assert rec.replace(r, b="z").c is r.c and rec.replace(r) is not r
    assert outcome(lambda: dataclasses.replace(d, z=1)) == outcome(lambda: rec.replace(r, z=1)) \
        == ("TypeError", "Shape.__init__() got an unexpected keyword argument 'z'")
    assert outcome(lambda: rec.replace(rc, a=1))[0] == outcome(lambda: rec.replace(object()))[0] == "TypeError"
    dc, rc = pair("Hidden", HIDDEN)
    assert len(rec.fields(rc)) == len(dataclasses.fields(dc)) == 4
    for df, rf in zip(dataclasses.fields(dc), rec.fields(rc)):
        assert (df.name, df.init, df.repr, df.compare) == (rf.name, rf.init, rf.repr, rf.compare)
        assert (df.default is dataclasses.MISSING) == (rf.default is rec.MISSING)
        assert df.default is dataclasses.MISSING or df.default == rf.default
        assert df.default_factory is rf.default_factory or (df.default_factory, rf.default_factory) == (dataclasses.MISSING, rec.MISSING)
    assert rec.fields(rc(1)) == rec.fields(rc)
    with pytest.raises(TypeError):
        rec.fields(object())


def test_is_record():
    dc, rc = pair("Shape", SHAPE)
    assert rec.is_record(rc) and rec.is_record(rc(1))
    assert not rec.is_record(dc) and not rec.is_record(dc(1)) and not rec.is_record(1) and not rec.is_record(None)


CALLS = [((), {}), ((1,), {}), ((1, 2, [3]), {}), ((1, 2, [3], 4), {}), ((1, 2, 3, 4, 5), {"z": 1}),
         ((), {"a": 1}), ((), {"b": 1}), ((1,), {"a": 1}), ((1, 2), {"b": 3}), ((1,), {"z": 1}),
         ((1, 2, 3, 4), {"a": 1}), ((), {"c": [1], "a": 2}), ((1,), {"c": None})]


@pytest.mark.parametrize("fields_", [SHAPE, [("a", "required", True, True), ("b", "required", True, True),
                                             ("c", "required", True, True)], [], [("c", ("factory", list), True, True)]],
                         ids=["mixed", "all-required", "none", "factory-only"])
@pytest.mark.parametrize("frozen", [False, True])
def test_argument_errors_read_as_pythons(fields_, frozen):
    dc, rc = pair("Args", fields_, frozen)
    for args, kwargs in CALLS:
        d, r = outcome(lambda: dc(*args, **kwargs)), outcome(lambda: rc(*args, **kwargs))
        assert d[0] == r[0] and (d[0] == "ok" and repr(d[1]) == repr(r[1]) or d[1] == r[1]), (args, kwargs, d, r)


def test_definition_errors_as_dataclasses():
    assert both("Order", [("a", ("default", 1), True, True), ("b", "required", True, True)]) == \
        [("TypeError", "non-default argument 'b' follows default argument")] * 2
    mutable = both("Mutable", [("a", ("default", []), False, True)])
    assert mutable[0] == mutable[1] and mutable[0][0] == "ValueError"
    assert outcome(lambda: dataclasses.field(default=1, default_factory=list)) == outcome(lambda: rec.field(default=1, default_factory=list))
    frozen_setattr = both("Own", SHAPE[:1], frozen=True, methods={"__setattr__": lambda self, n, v: None})
    assert frozen_setattr[0] == frozen_setattr[1] == ("TypeError", "Cannot overwrite attribute __setattr__ in class Own")
    _, rc = pair("Base", SHAPE[:1])
    with pytest.raises(TypeError, match="cannot inherit from record"):
        rec.record(type("Child", (rc,), {"__annotations__": {"b": "int"}}))


def test_the_class_own_methods_win():
    methods = {"__repr__": lambda self: "mine", "__str__": lambda self: "str", "__eq__": lambda self, other: True}
    for frozen in (False, True):
        dc, rc = pair("Own", SHAPE, frozen, methods)
        for cls in (dc, rc):
            one = cls(1)
            assert (repr(one), str(one), one == 2) == ("mine", "str", True)
        # a class writing __eq__ but not __hash__: frozen ones still hash, mutable ones do not (dataclasses' table)
        assert (dc.__hash__ is None) == (rc.__hash__ is None) == (not frozen)

    def own_init(self, *args):
        self.args = args
    dc, rc = pair("Own", SHAPE[:1], methods={"__init__": own_init})
    assert vars(dc(1, 2)) == vars(rc(1, 2)) == {"args": (1, 2)}
    dc, rc = pair("OwnHash", SHAPE[:1], methods={"__hash__": lambda self: 7})
    assert hash(dc(1)) == hash(rc(1)) == 7
    _, rc = pair("Target", SHAPE[:2], methods={"__str__": lambda self: f"{self.a}/{self.b}"})
    assert (str(rc(1)), repr(rc(1))) == ("1/x", "Target(a=1, b='x')")


def test_classvar_annotations_are_not_fields():
    @rec.record
    class Counted:
        total: ClassVar[int] = 0
        later: "ClassVar[str]" = "x"
        a: int = 1
    assert [f.name for f in rec.fields(Counted)] == ["a"] and Counted.total == 0 and repr(Counted()).endswith(".<locals>.Counted(a=1)")


def test_a_record_holding_itself_prints_dots():
    dc, rc = pair("Loop", [("items", ("factory", list), True, True)])
    for cls in (dc, rc):
        one = cls()
        one.items.append(one)
        assert repr(one) == "Loop(items=[...])"


def test_no_source_is_compiled(monkeypatch):
    """The point of the module: defining a record executes no generated source (dataclasses exec()s each class's)."""
    def refuse(*args, **kwargs):
        raise AssertionError("compiled source")
    monkeypatch.setattr(builtins, "exec", refuse)
    monkeypatch.setattr(builtins, "compile", refuse)
    dc, rc = both("Quick", SHAPE, frozen=True)
    assert dc[0] == "AssertionError" and rc[0] == "ok"
    assert repr(rc[1](1)) == "Quick(a=1, b='x', c=[])"


def test_records_are_defined_with_the_decorator_syntax():
    @rec.record(frozen=True)
    class Line:
        source: str
        text: str = ""

    @rec.record
    class Hit:
        message: str
        evidence: list = rec.field(default_factory=list)
    assert Line("log", text="t") == Line("log", "t") and Hit("m").evidence == []
    assert Line.__init__.__qualname__.endswith("Line.__init__") and Line.__match_args__ == ("source", "text")


# --- any layout ------------------------------------------------------------------------------------------------

values = st.one_of(st.none(), st.integers(-3, 3), st.text("ab'\"", max_size=3), st.tuples(st.integers(0, 2)))
layouts = st.lists(st.tuples(st.one_of(st.just("required"), st.tuples(st.just("default"), values),
                                       st.just(("factory", list)), st.just(("factory", tuple))),
                             st.booleans(), st.booleans()), max_size=6)


@settings(max_examples=150, deadline=None)
@given(layout=layouts, frozen=st.booleans(), data=st.data())
def test_a_record_and_a_dataclass_agree_on_any_layout(layout, frozen, data):
    fields_ = [(f"f{i}", how, repr_, compare) for i, (how, repr_, compare) in enumerate(layout)]
    (k1, dc), (k2, rc) = both("Any", fields_, frozen)
    assert (k1, None if k1 == "ok" else dc) == (k2, None if k2 == "ok" else rc)   # both defined, or refused alike
    if k1 != "ok":
        return
    made = []
    for _ in range(2):
        args = data.draw(st.lists(values, max_size=len(fields_) + 1))
        kwargs = data.draw(st.dictionaries(st.sampled_from([f[0] for f in fields_] + ["zz"]), values, max_size=3))
        d, r = outcome(lambda: dc(*args, **kwargs)), outcome(lambda: rc(*args, **kwargs))
        assert d[0] == r[0] and (d[0] != "ok" or repr(d[1]) == repr(r[1])) and (d[0] == "ok" or d[1] == r[1]), (d, r)
        if d[0] == "ok":
            made.append((d[1], r[1]))
            assert outcome(lambda: hash(d[1]))[0] == outcome(lambda: hash(r[1]))[0]
            if frozen and outcome(lambda: hash(d[1]))[0] == "ok":
                assert hash(d[1]) == hash(r[1])
    if len(made) == 2:
        (d1, r1), (d2, r2) = made
        assert (d1 == d2) == (r1 == r2) and (d1 == d1) == (r1 == r1)
