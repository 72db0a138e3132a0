"""The rule catalogue, imported in phase order so that registration order is phase order."""
from .registry import PHASES, RULES, Hit, Line, Unknown, rule  # noqa: F401

from . import workload, scheduling, creation, init, crash, crash_gpu, crash_app, eviction, network, node, node_operator  # noqa: F401,E402  (order matters)
