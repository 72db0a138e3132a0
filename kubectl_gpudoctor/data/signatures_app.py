"""Log signatures of application-level failures (files, permissions, auth, dependencies, exec)."""
from .log_signatures import Signature

APP = ()
