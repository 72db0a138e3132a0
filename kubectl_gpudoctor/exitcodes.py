"""The process exit codes of the contract, in one place."""
from enum import IntEnum


class Exit(IntEnum):
    OK = 0              # no critical finding
    PROBLEM = 1         # a problem was diagnosed, or the target fails and no rule explains it
    USAGE = 2           # usage error or bad input (unknown flag, malformed --from, target not found)
    UNDIAGNOSABLE = 3   # cluster unreachable, unauthorized, target forbidden, timeout
    INTERRUPTED = 130
