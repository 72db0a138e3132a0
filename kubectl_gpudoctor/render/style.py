"""Color decisions and styling; text stays fully readable without color (severity is always spelled out)."""
from __future__ import annotations

import os
from typing import Mapping, Optional


def want_color(mode: str, output: str, isatty: bool, env: Optional[Mapping[str, str]] = None) -> bool:
    """--color always|never wins; auto honours NO_COLOR, then FORCE_COLOR and CLICOLOR_FORCE, then CLICOLOR=0,
    then whether stdout is a terminal."""
    env = os.environ if env is None else env
    if output not in ("text", "wide") or mode == "never":
        return False
    if mode == "always":
        return True
    if env.get("NO_COLOR"):
        return False
    if any(env.get(k) not in (None, "", "0", "false") for k in ("FORCE_COLOR", "CLICOLOR_FORCE")):
        return True
    if env.get("CLICOLOR") == "0":
        return False
    return isatty and env.get("TERM") != "dumb"


class Style:
    """ANSI styling through colorama when enabled, plain text otherwise."""

    def __init__(self, color: bool):
        self.color = color
        if color:
            from colorama import Fore, Style as S
            self._codes = {"critical": Fore.RED + S.BRIGHT, "failing": Fore.RED + S.BRIGHT,
                           "warning": Fore.YELLOW + S.BRIGHT, "unknown": Fore.MAGENTA + S.BRIGHT,
                           "info": Fore.CYAN, "healthy": Fore.GREEN + S.BRIGHT, "passed": Fore.GREEN,
                           "failed": Fore.RED, "not-applicable": S.DIM, "bold": S.BRIGHT, "dim": S.DIM,
                           "snippet": Fore.GREEN}
            self._reset = S.RESET_ALL
        else:
            self._codes, self._reset = {}, ""

    def __call__(self, key: str, text: str) -> str:
        code = self._codes.get(key, "")
        return f"{code}{text}{self._reset}" if code else text
