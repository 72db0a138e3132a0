"""Kubernetes name rules (RFC 1123 subdomains and labels, API path segments): validation only, no I/O."""
from __future__ import annotations

import re
from typing import Optional

# k8s.io/apimachinery/pkg/util/validation: IsDNS1123Subdomain (pods, nodes, most objects) and IsDNS1123Label
# (namespaces, container names).
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
# What any object name may be as one segment of a request path (apimachinery's path.IsValidPathSegmentName
# refuses ".", "..", "/" and "%"); stricter here: the characters real names use (CRD objects may have upper
# case or ':' as in system:node roles).
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,252}")


class InvalidName(ValueError):
    """A name given on the command line that no Kubernetes object can have (exit 2)."""


def subdomain_error(value: str) -> Optional[str]:
    if not value or len(value) > 253 or not _SUBDOMAIN.fullmatch(value):
        return ("must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', "
                "starting and ending with a letter or digit, at most 253 characters")
    return None


def label_error(value: str) -> Optional[str]:
    if not value or len(value) > 63 or not _LABEL.fullmatch(value):
        return ("must be a lowercase RFC 1123 label: lowercase letters, digits and '-', "
                "starting and ending with a letter or digit, at most 63 characters")
    return None


def check(what: str, value: Optional[str], label: bool = False) -> None:
    """Raise InvalidName unless `value` (when given) is a valid name for `what` (pod, node, namespace…)."""
    if value is None:
        return
    error = label_error(value) if label else subdomain_error(value)
    if error:
        shown = value if len(value) <= 80 else value[:77] + "..."
        raise InvalidName(f"invalid {what} name {shown!r}: {error}")


def safe_segment(value) -> bool:
    """Whether a name may stand as one path segment (of a URL or a file path) without changing the path."""
    return isinstance(value, str) and value not in (".", "..") and bool(_SEGMENT.fullmatch(value))
