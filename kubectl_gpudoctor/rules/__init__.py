"""The rule catalogue: every rule module imported explicitly, then sorted into the order rules/order.py declares."""
from .registry import RULES, Hit, Line, Unknown, rule, sort_rules  # noqa: F401
from .order import PHASES  # noqa: F401

# Every module that holds rules (the order of these imports does not matter; order.py decides).
from .workload import creation_rejected, job_failed  # noqa: F401
from .scheduling import resources, nodes, reservation, claims, capacity, queues, dra_driver  # noqa: F401
from .creation import references, kubelet, gpu_runtime  # noqa: F401
from .init import containers, waiting  # noqa: F401
from .crash import exits, backoff, gpu, cuda, host, app, fabric, gpu_health  # noqa: F401
from .eviction import evicted, deadline  # noqa: F401
from .network import pod_network, rdma  # noqa: F401
from .node import resources as node_resources, inventory, stack, plugin_log, health  # noqa: F401

sort_rules()
