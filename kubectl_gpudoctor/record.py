"""Record classes (fields, defaults, frozen, eq, repr, replace) without dataclasses' per-class code generation (~0.5-1 ms each)."""
from __future__ import annotations

from _thread import get_ident
from operator import attrgetter


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


class FrozenInstanceError(AttributeError):
    """An assignment to, or deletion of, a field of a frozen record (dataclasses raises its own of the same name)."""


class Field:
    """One field of a record, as dataclasses.Field: every field here is an __init__ parameter."""
    __slots__ = ("name", "default", "default_factory", "repr", "compare", "init")

    def __init__(self, default=MISSING, default_factory=MISSING, repr: bool = True, compare: bool = True):  # noqa: A002
        self.name, self.default, self.default_factory = None, default, default_factory
        self.repr, self.compare, self.init = repr, compare, True

    def __repr__(self) -> str:
        return (f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r}, "
                f"repr={self.repr!r}, compare={self.compare!r})")


def field(*, default=MISSING, default_factory=MISSING, repr: bool = True, compare: bool = True) -> Field:  # noqa: A002
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, repr, compare)


def record(cls=None, *, frozen: bool = False):
    """@record or @record(frozen=True) on a class with annotated fields, as @dataclass / @dataclass(frozen=True)."""
    def wrap(cls):
        return _process(cls, frozen)
    return wrap if cls is None else wrap(cls)


def fields(obj) -> tuple:
    """The Field objects of a record class or instance, in order."""
    try:
        return obj.__record_fields__
    except AttributeError:
        raise TypeError("must be called with a record type or instance") from None


def is_record(obj) -> bool:
    """A record class or instance (as dataclasses.is_dataclass, both are)."""
    return hasattr(obj if isinstance(obj, type) else type(obj), "__record_fields__")


def replace(obj, **changes):
    """A new record of obj's class with obj's field values, those in changes replaced (through __init__)."""
    if isinstance(obj, type) or not is_record(obj):
        raise TypeError("replace() should be called on record instances")
    for f in obj.__record_fields__:
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


def _is_classvar(annotation) -> bool:
    # Under `from __future__ import annotations` the annotation is its source text ("ClassVar[int]",
    # "typing.ClassVar"); otherwise typing's repr of it says the same.
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.split("[")[0].strip().rpartition(".")[2] == "ClassVar"


def _process(cls, frozen: bool):
    for base in cls.__mro__[1:]:
        if "__record_fields__" in base.__dict__:
            # No record of the package extends another; rather refuse than half-support field inheritance.
            raise TypeError(f"record {cls.__name__} cannot inherit from record {base.__name__}")
    annotations = cls.__dict__.get("__annotations__") or {}
    for name, value in cls.__dict__.items():
        if isinstance(value, Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    flds = []
    for name, annotation in annotations.items():
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name = name
        if isinstance(value, Field):   # as dataclasses: the class attribute is the plain default, or none
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        if f.default is not MISSING and type(f.default).__hash__ is None:   # a list/dict/set every instance would share
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
        flds.append(f)
    cls.__record_fields__ = flds = tuple(flds)

    names = tuple(f.name for f in flds)
    _set(cls, "__init__", _make_init(cls, flds, frozen))
    _set(cls, "__repr__", _make_repr(tuple(f.name for f in flds if f.repr)))
    key = _tuple_getter(tuple(f.name for f in flds if f.compare))
    _set(cls, "__eq__", _make_eq(key))
    # dataclasses' rule (eq=True): a __hash__ the class wrote stays; otherwise frozen records hash their compared
    # fields and mutable ones are unhashable. A class that writes only __eq__ gets __hash__ = None from Python,
    # which does not count as written.
    own_hash = cls.__dict__.get("__hash__", MISSING)
    if own_hash is MISSING or (own_hash is None and "__eq__" in cls.__dict__):
        if frozen:
            def __hash__(self):
                return hash(key(self))
            _name(cls, __hash__)
            cls.__hash__ = __hash__
        else:
            cls.__hash__ = None
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in cls.__dict__:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
        cls.__setattr__, cls.__delattr__ = _make_frozen(cls, frozenset(names))
        for fn in (cls.__setattr__, cls.__delattr__):
            _name(cls, fn)
    if "__match_args__" not in cls.__dict__:
        cls.__match_args__ = names
    return cls


def _name(cls, fn):
    fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
    fn.__module__ = cls.__module__


def _set(cls, name: str, fn) -> None:
    """A generated method, unless the class defines its own (dataclasses keeps the class's __init__, __repr__, __eq__)."""
    if name not in cls.__dict__:
        _name(cls, fn)
        setattr(cls, name, fn)


def _tuple_getter(names: tuple):
    """obj -> (obj.a, obj.b, ...) for names, a tuple whatever their number (attrgetter of one name is not)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _make_init(cls, flds: tuple, frozen: bool):
    """__init__(self, *fields) as a closure over the fields: no source text to compile per class."""
    names = tuple(f.name for f in flds)
    n = len(names)
    required = 0
    for i, f in enumerate(flds):
        if f.default is MISSING and f.default_factory is MISSING:
            if required != i:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
            required += 1
    template = {f.name: f.default for f in flds}
    triples = tuple((f.name, f.default, f.default_factory) for f in flds)
    # By the number of positional arguments: the names keywords may still give, and (name, default, factory) of
    # the fields those arguments leave; made at first use, since a class is called with one or two counts.
    plans = [None] * (n + 1)

    def plan(given):
        plans[given] = made = (frozenset(names[given:]), triples[given:])
        return made
    where = f"{cls.__qualname__}.__init__()"
    # As dataclasses: a frozen record's fields are set past its own __setattr__. Field by field, in field order,
    # so that the values stay in the instance's compact shared-key storage (a dict written whole would double
    # an instance's size and slow every attribute read).
    setter = object.__setattr__ if frozen else setattr

    def __init__(self, *args, **kwargs):
        given = len(args)
        if given > n:
            _check_keywords(where, names, template, kwargs)   # Python reports a bad keyword first
            raise TypeError(_too_many(where, required, n, given))
        allowed, rest = plans[given] or plan(given)
        for name, value in zip(names, args):
            setter(self, name, value)
        if kwargs:
            if not allowed.issuperset(kwargs):   # an unknown name, or one given positionally too
                _check_keywords(where, names[:given], template, kwargs)
            get = kwargs.get
            for name, default, factory in rest:
                value = get(name, default)
                if value is MISSING:
                    if factory is MISSING:
                        raise TypeError(_missing(where, [m for m in names[given:required] if m not in kwargs]))
                    value = factory()
                setter(self, name, value)
        else:
            for name, value, factory in rest:
                if value is MISSING:
                    if factory is MISSING:
                        raise TypeError(_missing(where, names[given:required]))
                    value = factory()
                setter(self, name, value)
    return __init__


def _too_many(where: str, required: int, n: int, given: int) -> str:
    # Python's wording, counting self.
    takes = f"{required + 1}" if required == n else f"from {required + 1} to {n + 1}"
    plural = "" if takes == "1" else "s"
    return f"{where} takes {takes} positional argument{plural} but {given + 1} were given"


def _check_keywords(where: str, positional: tuple, template: dict, kwargs: dict) -> None:
    for name in kwargs:
        if name not in template:
            raise TypeError(f"{where} got an unexpected keyword argument {name!r}")
        if name in positional:
            raise TypeError(f"{where} got multiple values for argument {name!r}")


def _missing(where: str, missing: list) -> str:
    quoted = [repr(name) for name in missing]
    if len(quoted) == 1:
        listed = quoted[0]
    elif len(quoted) == 2:
        listed = f"{quoted[0]} and {quoted[1]}"
    else:
        listed = ", ".join(quoted[:-1]) + ", and " + quoted[-1]
    plural = "" if len(quoted) == 1 else "s"
    return f"{where} missing {len(quoted)} required positional argument{plural}: {listed}"


def _make_repr(names: tuple):
    running = set()   # (instance, thread) reprs under way: a record holding itself prints "..." (reprlib's guard)

    def __repr__(self):
        token = (id(self), get_ident())
        if token in running:
            return "..."
        running.add(token)
        try:
            return self.__class__.__qualname__ + "(" + ", ".join([f"{name}={getattr(self, name)!r}" for name in names]) + ")"
        finally:
            running.discard(token)
    return __repr__


def _make_eq(key):
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented
    return __eq__


def _make_frozen(cls, names: frozenset):
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return __setattr__, __delattr__
