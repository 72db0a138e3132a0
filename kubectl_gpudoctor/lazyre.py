"""Regular expressions compiled at their first use instead of at import: most never run for a given diagnosis."""
from __future__ import annotations

import re


class Pattern:
    """re.compile(pattern, flags), done on the first search, match or substitution; otherwise like re.Pattern."""
    __slots__ = ("pattern", "flags", "_rx")

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern, self.flags, self._rx = pattern, flags, None

    @property
    def compiled(self) -> "re.Pattern":
        if self._rx is None:
            self._rx = re.compile(self.pattern, self.flags)
        return self._rx

    def search(self, *args):
        return self.compiled.search(*args)

    def match(self, *args):
        return self.compiled.match(*args)

    def fullmatch(self, *args):
        return self.compiled.fullmatch(*args)

    def finditer(self, *args):
        return self.compiled.finditer(*args)

    def findall(self, *args):
        return self.compiled.findall(*args)

    def sub(self, *args, **kwargs):
        return self.compiled.sub(*args, **kwargs)

    def split(self, *args, **kwargs):
        return self.compiled.split(*args, **kwargs)

    def __getattr__(self, name):   # groupindex, groups, subn, …
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"lazyre.Pattern({self.pattern!r}, {self.flags!r})"


def compile(pattern: str, flags: int = 0) -> Pattern:  # noqa: A001 — named after the re function it defers
    return Pattern(pattern, flags)
