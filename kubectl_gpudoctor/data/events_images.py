"""Why an image pull failed (rate limit, platform, auth, not found, network, timeout, disk), from kubelet,
containerd, CRI-O and registry wording; data only, imported through event_signatures (never directly)."""
from typing import Tuple

# Why an image pull failed, from kubelet/containerd/CRI-O/registry wording; the first matching row wins.
# (sub-reason, pattern, remedy)
PULL_CAUSES: Tuple[Tuple[str, str, str], ...] = (
    # containerd: `unexpected status code https://registry-1.docker.io/v2/…: 429 Too Many Requests - Server message:
    # toomanyrequests: You have reached your pull rate limit` (kata-containers#10109); ECR `toomanyrequests: Rate
    # exceeded`; the kubelet's own `pull QPS exceeded` (--registry-qps).
    ("rate-limited", r"429 Too Many Requests|toomanyrequests|rate limit|Rate exceeded|pull QPS exceeded",
     "Authenticate the pulls (an imagePullSecret) or use a registry mirror/cache: the registry is rate-limiting "
     "node $node."),
    # containerd: `no match for platform in manifest: not found`; Docker: `no matching manifest for linux/arm64/v8 in
    # the manifest list entries`; CRI-O: `choosing image instance: no image found in image index for architecture
    # arm64, variant "v8", OS linux` / `no image found in manifest list for architecture`.
    ("platform", r"no match for platform in manifest|no matching manifest for|no image found in (?:image index|"
                 r"manifest list) for architecture",
     "Use an image built for node $node's architecture (label kubernetes.io/arch), or a multi-arch tag of $image."),
    # containerd: `failed to authorize: failed to fetch anonymous token: unexpected status …: 401 Unauthorized`
    # (nvcr.io, NVIDIA/TensorRT-LLM#306); Docker Hub answers `pull access denied, repository does not exist or may
    # require authorization: server message: insufficient_scope: authorization failed` for a private AND a missing
    # repository, so the remedy names both.
    ("unauthorized", r"401 Unauthorized|403 Forbidden|unauthorized|authorization failed|pull access denied|"
                     r"insufficient_scope|no basic auth credentials|authentication required|denied: ",
     "Check that $image exists and give the pod registry credentials: an imagePullSecret of type "
     "kubernetes.io/dockerconfigjson in namespace $namespace (nvcr.io takes user `$$oauthtoken` and an NGC API key)."),
    # containerd: `failed to resolve reference "ghcr.io/x/y:v0.0.29": ghcr.io/x/y:v0.0.29: not found`
    # (cvisionai/tator#439); CRI-O/Docker: `manifest unknown`; ECR: `name unknown: The repository with name … does not
    # exist`.
    ("not-found", r"not found|manifest unknown|repository does not exist|NotFound|name unknown",
     "Fix the image name or tag: $image does not exist in the registry (check the tag list, e.g. "
     "`crane ls <repository>` or the registry UI)."),
    ("network", r"no such host|dial tcp[^\n]*(?:i/o timeout|connection refused|network is unreachable)|"
                r"connection reset by peer|x509: certificate|tls: failed to verify|server gave HTTP response to HTTPS",
     "Fix node $node's path to the registry (DNS, proxy, firewall, CA certificates) or use a reachable mirror."),
    # Large CUDA images (several GB): containerd cancels a pull that makes no progress for image_pull_progress_timeout
    # (`cancel pulling image … because of no progress in 1m0s`) and the kubelet reports `rpc error: code = Canceled
    # desc = failed to pull and unpack image …: context canceled` (kubernetes/kubernetes#131521, #59376).
    ("timeout", r"context deadline exceeded|context canceled|Client\.Timeout exceeded|TLS handshake timeout|i/o timeout",
     "The pull was cut off: check the registry's reachability and throughput from node $node; for very large "
     "images pre-pull them (a DaemonSet or the node image), use a closer mirror, or raise containerd's "
     "image_pull_progress_timeout."),
    ("no-space", r"no space left on device",
     "Free disk on node $node (`crictl rmi --prune` removes unused images) or give it a larger disk: the image "
     "layers do not fit."),
)
