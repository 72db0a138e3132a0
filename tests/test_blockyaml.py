"""The kubeconfig reader without PyYAML: where it answers, the answer is exactly PyYAML's safe_load; it answers
for the kubeconfigs kubectl and the cloud CLIs write, and leaves everything else to PyYAML."""
import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from kubectl_gpudoctor.collect import blockyaml

TRICKY = ["yes", "No", "on", "OFF", "true", "False", "null", "~", "NULL", "y", "n", "tRue", "0", "00", "0755", "12",
          "1.5", "-1", "-x", "--region", "-", ".5", ".inf", "1e3", "2026-12-02", "12:30", "a: b", "a:b", "#x", "a #b",
          "a#b", "- x", "? x", "&a", "*a", "!t", "|", ">", "%x", "@x", "`x", "[a]", "{a}", "{}", "[]", "'q'", '"q"',
          "", " lead", "trail ", "é", "\u2028", "tab\there", "line\nbreak", "\x07", "it's", 'say "hi"', "back\\slash",
          "<<", "=", "https://127.0.0.1:6443", "arn:aws:eks:us-west-2:1:cluster/gpu", "LS0tLS1CRUdJTi==", "k: "]
ALPHABET = "abcXYZ019 -_.:/#'\"\\!&*?|>{}[],%@`é\t\n"

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10 ** 6), st.floats(allow_nan=False),
                    st.sampled_from(TRICKY), st.text(ALPHABET, max_size=10))
keys = st.one_of(st.sampled_from(TRICKY), st.text(ALPHABET, min_size=1, max_size=8))
documents = st.dictionaries(keys, st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=16),
    min_size=1, max_size=6)


def same(a, b) -> bool:
    """Equal and of the same types all the way down (True == 1 and 1.0 == 1 in Python; not here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=documents, flow=st.sampled_from([False, None]), indent=st.sampled_from([2, 4]),
       width=st.sampled_from([20, 80, 4096]), unicode=st.booleans(), start=st.booleans(), crlf=st.booleans(),
       comment=st.booleans())
def test_whatever_it_reads_pyyaml_reads_the_same(doc, flow, indent, width, unicode, start, crlf, comment):
    text = yaml.safe_dump(doc, default_flow_style=flow, indent=indent, width=width, allow_unicode=unicode,
                          explicit_start=start, sort_keys=False)
    if comment:
        text = "# written by hand\n" + text.replace("\n", "\n  # indented comment\n", 1)
    if crlf:
        text = text.replace("\n", "\r\n")
    fast = blockyaml.load(text)
    if fast is not None:
        assert same(fast, yaml.safe_load(text)), text


KUBECTL = """apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwKY21WeWJtVjBaWE13SGhjTk1qVXhNakF5TVRVMU5qQTVXaGNOTXpVeE1UTXdNVFUxTmpBNVdqQVYKTVJNd0VRWURWUVFERXdwcmRXSmxjbTVsZEdWek1JSUJJakFOQmdrcWhraUc5dzBCQVFFRkFBT0NBUThBTUlJQgpDZ0tDQVFFQXg0VTBqcm8KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
    server: https://127.0.0.1:39781
  name: kind-gpu
- cluster:
    insecure-skip-tls-verify: true
    proxy-url: http://proxy.corp.example:3128
    server: https://10.0.12.7:6443
    tls-server-name: kubernetes.default.svc
  name: lab
contexts:
- context:
    cluster: kind-gpu
    namespace: serving
    user: kind-gpu
  name: kind-gpu
- context:
    cluster: lab
    user: lab-admin
  name: lab
current-context: kind-gpu
kind: Config
preferences: {}
users:
- name: kind-gpu
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURJVENDQWdtZ0F3SUJBZ0lJWHBrYVNTZGx4Wm93RFFZSktvWklodmNOQVFFTEJRQXdGVEVUTUJFR0ExVUUKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVBeHdGTmJ4Ci0tLS0tRU5EIFJTQSBQUklWQVRFIEtFWS0tLS0tCg==
- name: lab-admin
  user:
    token: eyJhbGciOiJSUzI1NiIsImtpZCI6IjNfQ2dGVnJZIn0.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJl
"""

EKS = """apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
    server: https://3F2A8C1D0E9B7A6C5D4E3F2A1B0C9D8E.gr7.us-west-2.eks.amazonaws.com
  name: arn:aws:eks:us-west-2:123456789012:cluster/gpu-training
contexts:
- context:
    cluster: arn:aws:eks:us-west-2:123456789012:cluster/gpu-training
    user: arn:aws:eks:us-west-2:123456789012:cluster/gpu-training
  name: arn:aws:eks:us-west-2:123456789012:cluster/gpu-training
current-context: arn:aws:eks:us-west-2:123456789012:cluster/gpu-training
kind: Config
preferences: {}
users:
- name: arn:aws:eks:us-west-2:123456789012:cluster/gpu-training
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - --region
      - us-west-2
      - eks
      - get-token
      - --cluster-name
      - gpu-training
      - --output
      - json
      command: aws
      env:
      - name: AWS_PROFILE
        value: ml-platform
"""

GKE = """apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
    server: https://34.118.42.7
  name: gke_ml-prod_us-central1_a100-pool
contexts:
- context:
    cluster: gke_ml-prod_us-central1_a100-pool
    user: gke_ml-prod_us-central1_a100-pool
  name: gke_ml-prod_us-central1_a100-pool
current-context: gke_ml-prod_us-central1_a100-pool
kind: Config
preferences: {}
users:
- name: gke_ml-prod_us-central1_a100-pool
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin for use with kubectl by following
        https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
      provideClusterInfo: true
"""

AKS = """apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
    server: https://gpu-aks-dns-4f1c2a.hcp.westeurope.azmk8s.io:443
  name: gpu-aks
contexts:
- context:
    cluster: gpu-aks
    user: clusterUser_ml_gpu-aks
  name: gpu-aks
current-context: gpu-aks
kind: Config
preferences: {}
users:
- name: clusterUser_ml_gpu-aks
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - get-token
      - --environment
      - AzurePublicCloud
      - --server-id
      - 6dae42f8-4368-4678-94ff-3960e28e3630
      - --login
      - azurecli
      command: kubelogin
      env: null
      installHint: |2

        kubelogin is not installed which is required to connect to AAD enabled cluster.
      provideClusterInfo: false
"""


@pytest.mark.parametrize("text", [KUBECTL, EKS], ids=["kubectl-kind-and-token", "aws-eks-update-kubeconfig"])
def test_reads_what_kubectl_and_the_aws_cli_write(text):
    fast = blockyaml.load(text)
    assert fast is not None and same(fast, yaml.safe_load(text))


@pytest.mark.parametrize("text", [GKE, AKS], ids=["gcloud-folded-install-hint", "az-literal-block"])
def test_leaves_multi_line_scalars_to_pyyaml(text):
    assert blockyaml.load(text) is None


@pytest.mark.parametrize("text", [
    KUBECTL.replace("server: https://127.0.0.1:39781", "server: https://127.0.0.1:39781  # the kind cluster"),
    KUBECTL.replace("- cluster:\n    insecure", "- cluster: &lab\n    insecure"),
    KUBECTL.replace("preferences: {}", "preferences: {colors: true}"),
    KUBECTL.replace("current-context: kind-gpu", "current-context: kind-gpu\n---\nkind: Other"),
    KUBECTL.replace("namespace: serving", "namespace: sérving"),
    KUBECTL.replace("insecure-skip-tls-verify: true", "insecure-skip-tls-verify: True"),
    "- just\n- a list\n",
    "",
])
def test_declines_what_it_does_not_fully_read(text):
    """A comment after a value, an anchor, a flow mapping, a second document, non-ASCII text: PyYAML's call."""
    assert blockyaml.load(text) is None or same(blockyaml.load(text), yaml.safe_load(text))
    if text and "True" not in text:
        assert blockyaml.load(text) is None


def test_yaml_1_1_scalars_resolve_as_pyyaml_does():
    text = "a: yes\nb: off\nc: ~\nd: 12\ne: '12'\nf: \"x\\ty\"\ng:\nh: []\ni: -v\nj: it's\n"
    assert same(blockyaml.load(text), yaml.safe_load(text))
    assert blockyaml.load(text) == {"a": True, "b": False, "c": None, "d": 12, "e": "12", "f": "x\ty", "g": None,
                                     "h": [], "i": "-v", "j": "it's"}


@pytest.mark.parametrize("word", ["yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False",
                                  "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~", "y", "n",
                                  "yEs", "nULL", "0", "7", "42", "007", "-3", "3.0", "0x1f", "1_000", "12:30", "-", "-v"])
def test_every_plain_spelling_pyyaml_resolves(word):
    """Plain words as hand-written kubeconfigs hold them (PyYAML's own dumps quote the ambiguous ones)."""
    for text in (f"key: {word}\n", f"list:\n- {word}\n"):
        fast = blockyaml.load(text)
        assert fast is None or same(fast, yaml.safe_load(text)), text
        if word in ("yes", "NO", "on", "Off", "true", "FALSE", "null", "~", "y", "42", "-v"):
            assert fast is not None, f"{text!r} is plain enough to read"
