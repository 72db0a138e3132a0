"""Patterns compiled at first use behave like re's, and every one of them in the package compiles."""
import importlib
import pkgutil
import re

import kubectl_gpudoctor
from kubectl_gpudoctor import lazyre


def test_behaves_like_a_compiled_pattern():
    text = "0/8 nodes are available: 8 Insufficient nvidia.com/gpu."
    lazy, plain = lazyre.compile(r"(\d+)/(\d+) nodes", re.I), re.compile(r"(\d+)/(\d+) nodes", re.I)
    assert lazy._rx is None, "nothing is compiled before the first use"
    assert lazy.search(text).groups() == plain.search(text).groups() == ("0", "8")
    assert lazy.match(text).span() == plain.match(text).span()
    assert lazy.fullmatch("1/2 NODES") and not lazy.fullmatch(text)
    assert lazy.sub("#", text) == plain.sub("#", text) and lazy.findall(text) == plain.findall(text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in plain.finditer(text)]
    assert lazy.split(text, maxsplit=1) == plain.split(text, maxsplit=1)
    assert lazy.groups == 2 and lazy.subn("#", text) == plain.subn("#", text)


def _deferred_patterns():
    for info in pkgutil.walk_packages(kubectl_gpudoctor.__path__, "kubectl_gpudoctor."):
        if info.name.endswith("__main__"):   # runs the command
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            for item in (value if isinstance(value, tuple) else (value,)):
                if isinstance(item, lazyre.Pattern):
                    yield f"{info.name}.{name}", item


def test_every_deferred_pattern_in_the_package_compiles():
    """An invalid pattern would fail at its first use (inside a rule), not at import: so all are compiled here."""
    found = dict(_deferred_patterns())
    assert len(found) >= 20, sorted(found)
    for where, pattern in found.items():
        assert isinstance(pattern.compiled, re.Pattern), where
