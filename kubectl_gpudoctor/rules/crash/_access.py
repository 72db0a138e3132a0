"""Evidence helpers for the crash rules about other parties: which credentials a container uses (names only,
never values) and what a rejected request or a failed connection means. Pure; no I/O."""
from __future__ import annotations

import re
from typing import List

from ...data import kserve_storage
from ...data.app_context import CREDENTIAL_ENV
from ...kube.objects import spec

# --- credentials (names only) ---------------------------------------------------------------------------

def auth_target(line: str, text: str) -> str:
    if re.search(r"system:serviceaccount", line):
        return "k8s"
    if re.search(r"operation|NoCredentialsError|Unable to locate credentials|botocore|\bS3\b", line):
        return "s3"
    if re.search(r"storage\.\w+\.\w+ access|googleapis", line):
        return "gcs"
    if re.search(r"Authorization(?:PermissionMismatch|Failure)|AuthenticationFailed|windows\.net", line):
        return "azure"
    if re.search(r"huggingface|GatedRepo|gated repo|Authorization header|user token|HfHub|hf\.co", line + "\n" + text):
        return "hub"
    if re.search(r"nvcr\.io|NGC", line + text):
        return "ngc"
    return "generic"


def credential_refs(ev, c, target: str) -> List[str]:
    """How the container gets credentials for the target: env names and their Secret/ConfigMap sources."""
    wanted = CREDENTIAL_ENV.get(target, ())
    out = []
    for e in c.get("env") or []:
        n = e.get("name") or ""
        if not (n in wanted or (target == "generic" and re.search(r"TOKEN|API_KEY|SECRET|PASSWORD|CREDENTIAL", n))):
            continue
        ref = (e.get("valueFrom") or {}).get("secretKeyRef") or (e.get("valueFrom") or {}).get("configMapKeyRef")
        if ref:
            kind = "Secret" if "secretKeyRef" in e["valueFrom"] else "ConfigMap"
            gone = " (it does not exist)" if ev.is_absent(kind, ref.get("name"), ev.target.namespace) else ""
            out.append(f"{n} from {kind} {ref.get('name')} key {ref.get('key')}" + (" (optional)" if ref.get("optional") else "") + gone)
        else:
            out.append(f"{n} is set as a literal value in the spec" if e.get("value") else f"{n} is set but empty")
    for ef in c.get("envFrom") or []:
        if ef.get("secretRef"):
            out.append(f"every key of Secret {ef['secretRef'].get('name')} (envFrom)")
    if target in ("s3", "gcs", "azure", "k8s"):
        out.append(f"service account {spec(ev.pod).get('serviceAccountName') or 'default'}")
    return out


def _kserve_download(ev, c) -> bool:
    """KServe's injected storage-initializer: its env is built from a ServiceAccount's Secrets, never set on it."""
    meta = (ev.pod or {}).get("metadata") or {}
    marked = set(meta.get("annotations") or {}) & set(kserve_storage.SOURCE_ANNOTATIONS)
    named = any(k.endswith("/inferenceservice") and k.split("/")[0] in kserve_storage.GROUPS
                for k in meta.get("labels") or {})
    return c.get("name") == kserve_storage.NAME and bool(marked or named)


def _hub_repo(text: str) -> str:
    m = re.search(r"Access to model (\S+?) is|huggingface\.co/(?:api/models/)?([\w.-]+/[\w.-]+)", text)
    return (m.group(1) or m.group(2)) if m else "the model"


def auth_meaning(ev, c, target, line: str, creds: List[str], text: str = ""):
    """(what the rejection means, snippet, fix or None) — names only, never values."""
    ns, sa = ev.target.namespace, spec(ev.pod).get("serviceAccountName") or "default"
    token = next((x for x in creds if x.startswith(CREDENTIAL_ENV["hub"])), None)
    secret = re.search(r"from Secret (\S+) key (\S+)", token or "")
    if target == "hub":
        repo = _hub_repo(line + "\n" + text)
        if re.search(r"not in the authorized list|403", line):
            return ("the Hugging Face token is valid but its account has not been granted access to this gated model",
                    "", f"Request access to {repo} on huggingface.co with the account that owns the token"
                        + (f" in Secret {secret.group(1)}" if secret else "") + ", then delete the pod to retry now.")
        if token:
            return (f"the Hugging Face hub rejected the token ({token}): it is invalid, expired or revoked",
                    (f"kubectl create secret generic {secret.group(1)} -n {ns} --from-literal={secret.group(2)}=<new token> "
                     "--dry-run=client -o yaml | kubectl apply -f -") if secret else "",
                    f"Put a valid read token for {repo} into " + (f"Secret {secret.group(1)}" if secret else "the container's env")
                    + ", then delete the pod to retry now.")
        unknown = " (or the repo id is wrong: the hub answers 401 for repos it cannot show)" if "Repository Not Found" in text else ""
        return ("the request to the Hugging Face hub carried no token (HF_TOKEN is not set), and the repo is gated or private" + unknown,
                f"kubectl create secret generic hf-token -n {ns} --from-literal=token=<token>\n# container {c['name']}\n"
                "env:\n- name: HF_TOKEN\n  valueFrom:\n    secretKeyRef:\n      name: hf-token\n      key: token",
                f"The model download (KServe's {c['name']}) needs an HF_TOKEN for an account that has been granted {repo}."
                if _kserve_download(ev, c) else
                f"Give container {c['name']} an HF_TOKEN from a Secret, for an account that has been granted {repo}.")
    if target == "s3":
        if re.search(r"NoCredentials|Unable to locate", line):
            why = f"no object-store credentials at all: no AWS_* variables and no web identity on service account {sa}"
        elif re.search(r"InvalidAccessKeyId|SignatureDoesNotMatch", line):
            why = "the access key or secret key is wrong"
        elif "ExpiredToken" in line:
            why = "the session credentials have expired"
        else:
            why = "the identity is not allowed to read that bucket/object (bucket policy, IAM role or KMS key)"
        return (f"the object store rejected the request: {why}",
                f"kubectl get serviceaccount {sa} -n {ns} -o jsonpath='{{.metadata.annotations}}'   # IRSA/Pod Identity role", None)
    if target == "k8s":
        m = re.search(r'"system:serviceaccount:([^:"]+):([^"]+)" cannot (\w+) resource "([^"]+)"', line)
        if m:
            return (f"service account {m.group(2)} is not allowed to {m.group(3)} {m.group(4)} (RBAC)",
                    f"kubectl auth can-i {m.group(3)} {m.group(4)} -n {m.group(1)} --as=system:serviceaccount:{m.group(1)}:{m.group(2)}",
                    f"Grant service account {m.group(2)} a Role with {m.group(3)} on {m.group(4)} (RoleBinding in {m.group(1)}).")
    if target == "gcs":
        return (f"the Google service account behind {sa} lacks access to the bucket",
                f"kubectl get serviceaccount {sa} -n {ns} -o jsonpath='{{.metadata.annotations}}'   # Workload Identity", None)
    return "the server rejected the credentials (401/403)", "", None


# --- connections -----------------------------------------------------------------------------------------

def endpoint(m):
    g = m.groupdict()
    host = (g.get("host") or g.get("host2") or "").strip("[]") or None
    return host, g.get("port"), (g.get("why") or g.get("why2") or "connection failed").strip()


def _kind(why: str) -> str:
    if re.search(r"(?i)no such host|not known|name resolution|ENOTFOUND|EAI_AGAIN|UnknownHost|resolve|translate host"
                 r"|No address|nodename|getaddrinfo|DNS|misbehaving", why):
        return "dns"
    if re.search(r"(?i)refused", why):
        return "refused"
    return "timeout" if re.search(r"(?i)timed? ?out|ETIMEDOUT|no route|EHOSTUNREACH", why) else "other"


def dependency_meaning(ev, host, port, why):
    """(meaning, snippet or None for the rule's, fix or None for the rule's)."""
    kind, ns = _kind(why), ev.target.namespace
    if host in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
        return (f"nothing listened on {host}:{port or '?'} yet: a sidecar in the same pod starts later, or listens on another port",
                "", "Start the sidecar first: declare it as a native sidecar (an init container with restartPolicy: Always "
                    "and a startupProbe), or make the app retry until it listens.")
    external = host and "." in host and not re.search(r"\.svc(\.|$)|cluster\.local$|^\d+\.\d+\.\d+\.\d+$", host)
    if re.match(r"5\d\d\b", why):
        return (f"{host or 'the server'} answered {why}: it was reachable but failing", "",
                "Retry later, or remove the dependency at start: for model hubs, keep the model on a volume and set "
                "HF_HUB_OFFLINE=1 so start-up does not call the hub.")
    if external:
        return (f"the pod cannot reach {host} outside the cluster (no egress, DNS or proxy for it)", "",
                "Allow egress to it (NetworkPolicy, firewall, HTTPS_PROXY), or remove the dependency: for model hubs, "
                "pre-download the model to a volume and set HF_HUB_OFFLINE=1.")
    if not host:
        return ("the log does not name the host; find it in the lines above", "", None)
    meaning = {"dns": f"the name {host} does not resolve from namespace {ns}: no Service of that name exists here (if it "
                      f"lives in another namespace, use {host}.<namespace>.svc)",
               "refused": f"the address answers but nothing accepts connections on {'port ' + port if port else 'its port'}: the backend's pods "
                          f"are not ready (its Service has no ready endpoints) or the port is wrong",
               "timeout": "connections time out: a NetworkPolicy or firewall drops them, or the backend is overloaded",
               }.get(kind, "the backend was not reachable when the container started")
    return meaning, None, None


def wait_command(host, port, why) -> str:
    if not host:
        return ""
    if port and _kind(why) != "dns":
        return f"until nc -z {host} {port}; do echo waiting for {host}:{port}; sleep 2; done"
    return f"until nslookup {host}; do echo waiting for {host}; sleep 2; done"
