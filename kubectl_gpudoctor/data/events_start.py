"""Event and container-status signatures of a container process the runtime could not start because its own init was
killed by the memory limit; data only, imported through event_signatures (never directly)."""
from typing import Tuple

from .signature import EventSignature

START: Tuple[EventSignature, ...] = (
    # --- oom-killed before the command ran ---------------------------------------------------------------------
    # runc: `OCI runtime create failed: runc create failed: unable to start container process: container init was
    # OOM-killed (memory limit too low?): unknown` (aws/amazon-ecs-agent#3021; StartError, exit 128, startedAt 1970);
    # crun: `OOM: the memory limit could be too low` (containers/crun#635).
    EventSignature("init-oom", "oom-killed",
                   r"container init was OOM.?killed(?P<hint> \(memory limit too low\?\))?|OOM: the memory limit could be too low",
                   "the runtime's own init process was killed by the container's memory limit before the command ran: "
                   "the limit is far too low (a typo such as 8Mi for 8Gi)"),
)
