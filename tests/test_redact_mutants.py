"""The redactor's decisions pinned where mutation testing found them loose (issue 23): what a masked line reads
as whole, which names keep a value and which do not, how far back a harmless label counts, which long runs are
random enough, and what a bundle's copy of a Secret, a workload and its containers keeps. In-process and fast:
the redact group runs this file against every mutant of safety/redact.py."""
import base64

import pytest

from kubectl_gpudoctor.safety import redact
from kubectl_gpudoctor.safety.redact import REDACTED, for_bundle, mask, secret_metadata
from tests.test_inert_codepoints import _leaf, _nested

KEY = "9Xk2mQ7vR4tL8pW3nZ6yB1cF5hJ0dS7gA2eK4uY8oI3w"   # a signing key's shape: 44 base64 characters, mixed
POD = "sk-proj-llama-inference-7d9f8b6c5-x2x9q"         # a pod whose name has an OpenAI key's prefix
HF = "hf_Ab3dEf5gHi7jKl9mNo1pQr2s"


# --- a masked line reads whole: only the value goes --------------------------------------------------------------

@pytest.mark.parametrize("text, shown", [
    ("DATABASE_URL=postgres://app:Pg-pr0d-2026!x@db.prod.svc:5432/app",
     "DATABASE_URL=postgres://app:<redacted:password>@db.prod.svc:5432/app"),
    ("error: dial mongodb://trainer:Xk2mQ7vR@mongo-0.mongo.ml.svc:27017/runs timed out",
     "error: dial mongodb://trainer:<redacted:password>@mongo-0.mongo.ml.svc:27017/runs timed out"),
    (f"INFO loading with HF_TOKEN={HF} from the hub", "INFO loading with HF_TOKEN=<redacted:hf-token> from the hub"),
    (f"signing key {KEY} loaded", "signing key <redacted:secret> loaded"),
])
def test_the_rest_of_a_masked_line_is_kept_character_for_character(text, shown):
    assert mask(text) == (shown, 1)


def test_a_key_whose_base64_starts_with_digits_and_a_slash_is_no_port_and_path():
    """`host:443/path@…` is a port and a path, not a password; a 40-character AWS secret access key that begins
    with digits and a slash is still a key."""
    text = "aws_secret_access_key=1234/K7MDENG+bPxRfiCYEXAMPLEKEYwJalrXUtn"
    assert mask(text) == ("aws_secret_access_key=<redacted:aws-secret-key>", 1)
    assert mask("see https://registry:5000/v2/acme@sha256") == ("see https://registry:5000/v2/acme@sha256", 0)


def test_a_value_that_is_not_a_string_comes_back_as_it_is():
    assert redact.named_settings(8000) == 8000 and redact.named_settings(None) is None
    assert mask(b"token " + HF.encode()) == (b"token " + HF.encode(), 0)
    assert mask(8080) == (8080, 0) and mask("") == ("", 0) and mask(None) == (None, 0)


# --- names keep only what they cover ------------------------------------------------------------------------------

def test_a_name_is_kept_wherever_it_sits_in_the_line():
    line = "Normal  Pulled  kubelet  Successfully pulled image for pod serving/"
    for k in range(len(line) + 1):
        text = line[:k] + POD
        assert mask(text, names=(POD,)) == (text, 0), k


def test_a_name_at_the_start_of_the_text_is_kept():
    assert mask(f"{POD} is Running", names=(POD,)) == (f"{POD} is Running", 0)
    assert mask(f"{POD}/{POD}", names=(POD,)) == (f"{POD}/{POD}", 0)


def test_a_name_elsewhere_in_the_text_does_not_keep_a_secret():
    out, n = mask(f"{HF} was read by pod {POD}", names=(POD,))
    assert (out, n) == (f"<redacted:hf-token> was read by pod {POD}", 1)


def test_a_name_that_only_touches_a_secret_does_not_keep_it():
    assert mask(f"HF_TOKEN={HF}", names=("HF_TOKEN=",)) == ("HF_TOKEN=<redacted:hf-token>", 1)
    assert mask(f"{HF}@huggingface.co", names=("@huggingface.co",)) == ("<redacted:hf-token>@huggingface.co", 1)


def test_names_are_found_again_after_an_earlier_value_was_masked():
    """Masking a long value moves what follows it: a name's place is found again, so a password after the name
    is not taken for part of it."""
    long_token = "hf_" + "Ab3dEf5gHi7jKl9mNo1pQr2sTu4vWx6yZa8bCd0eFg"   # 24 characters longer than its label
    text = f"{long_token} pod {POD} url postgres://app:S3cr3tPass@db:5432/x"
    out, n = mask(text, names=(POD,))
    assert out == f"<redacted:hf-token> pod {POD} url postgres://app:<redacted:password>@db:5432/x" and n == 2
    password = "Pg-" + "Ab3dEf5gHi7jKl9mNo1pQr2sTu4vWx6yZa8bCd0eFg1h"    # a URL's password, longer than its label
    text = f"postgres://app:{password}@db:5432/x pod {POD} key {KEY}"
    out, n = mask(text, names=(POD,))
    assert out == f"postgres://app:<redacted:password>@db:5432/x pod {POD} key <redacted:secret>" and n == 2


# --- which long runs are random enough ---------------------------------------------------------------------------

def test_a_path_with_a_random_segment_is_kept_and_a_one_letter_segment_makes_no_path():
    assert mask("gs://ckpts/Xk2mQ7vR4tL8pW3nZ6yB1cF5hJ0dS7gA2/model")[1] == 0
    assert mask("s3://ml/Xk2mQ7vR4tL8pW3nZ6yB1cF5hJ0dS7gA2eK4")[1] == 0      # a two-letter bucket: a path
    assert mask("key a/Xk2mQ7vR4tL8pW3nZ6yB1cF5hJ0dS7gA2eK4uY8oI3w") == ("key <redacted:secret>", 1)


def test_a_harmless_label_counts_only_right_before_the_value_and_within_its_look_back():
    assert mask(f"RequestId: {KEY}")[1] == 0
    assert mask(f"sha512-{KEY}")[1] == 0                                         # at the start of the text
    line = "E1204 12:00:03.118 storage.go:212] upload of checkpoint shard 3 of 8 to the bucket failed; retrying "
    label = "request id:"
    at_bound = line + label + " " * (120 - len(label)) + KEY                  # the label starts 120 characters back
    assert mask(at_bound) == (at_bound, 0)
    past = line + label + " " * (121 - len(label)) + KEY                      # 121 characters back: no label
    assert mask(past) == (line + label + " " * (121 - len(label)) + "<redacted:secret>", 1)


def test_a_mixed_run_of_low_entropy_is_no_key():
    """Base64 of mostly zero bytes (a protobuf blob in a log line) mixes cases and digits but is not random."""
    blob = base64.b64encode(b"\x00" * 48 + b"timestamp").decode()
    assert mask(f"blob {blob}") == (f"blob {blob}", 0)
    assert mask(f"blob {KEY}") == ("blob <redacted:secret>", 1)


def test_an_identifier_of_words_is_kept_up_to_its_word_share():
    """A run counts as words when they fill 60 % of it: exactly 60 % is still words, a little less is not."""
    words, rest = "Abcdefghijklmnopqrstu", "9X2K4T8W3Z6B1C"                    # 21 of 35 characters: 60 %
    assert mask(f"kernel {words}{rest}")[1] == 0
    assert mask(f"kernel {words[:-1]}{rest}7")[1] == 1                          # 20 of 35
    assert mask("[TRT] Loaded engine: DisentangledAttentionPluginDynamicFp16Kernel2")[1] == 0


# --- bundles: a Secret as metadata, named values hidden in every container -----------------------------------------

def test_a_secret_keeps_its_metadata_and_loses_its_data_and_managed_fields():
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": {"token": "aGZfc2VjcmV0"},
              "metadata": {"name": "hf-token", "namespace": "serving", "uid": "3f2a1b4c-5d6e-4f80-9a1b-2c3d4e5f6a7b",
                           "resourceVersion": "4711", "labels": {"app": "vllm"},
                           "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                                           '{"data":{"token":"aGZfc2VjcmV0"}}', "team": "ml"},
                           "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update"}]}}
    assert secret_metadata(secret) == for_bundle(secret) == {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "hf-token", "namespace": "serving", "uid": "3f2a1b4c-5d6e-4f80-9a1b-2c3d4e5f6a7b",
                     "resourceVersion": "4711", "labels": {"app": "vllm"},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": REDACTED, "team": "ml"}}}
    assert "annotations" not in secret_metadata({"kind": "Secret", "metadata": {"name": "s"}})["metadata"]


def _deployment(container, annotations=None):
    meta = {"name": "chat", "namespace": "serving", "managedFields": [{"manager": "kubectl"}]}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"template": {"spec": {"containers": [container]}}}}


def test_a_workloads_last_applied_configuration_is_hidden_and_other_annotations_kept():
    applied = '{"spec":{"template":{"spec":{"containers":[{"env":[{"name":"DB_PASSWORD","value":"hunter2"}]}]}}}}'
    out = for_bundle(_deployment({"name": "vllm"}, {"kubectl.kubernetes.io/last-applied-configuration": applied,
                                                    "deployment.kubernetes.io/revision": "3"}))
    assert out["metadata"] == {"name": "chat", "namespace": "serving", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": REDACTED, "deployment.kubernetes.io/revision": "3"}}
    out = for_bundle(_deployment({"name": "vllm"}, {"deployment.kubernetes.io/revision": "3"}))
    assert out["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "3"}


def test_env_values_whose_names_say_secret_are_hidden_and_others_kept():
    env = [{"name": "DB_PASSWORD", "value": "hunter2"}, {"name": "LOG_LEVEL", "value": "info"},
           {"name": "JAVA_OPTS", "value": "-Xmx8g -Djavax.net.ssl.keyStorePassword=changeit"},
           {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
           {"name": "PORT", "value": None}]
    out = for_bundle(_deployment({"name": "vllm", "env": env}))
    assert out["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "DB_PASSWORD", "value": REDACTED}, {"name": "LOG_LEVEL", "value": "info"},
        {"name": "JAVA_OPTS", "value": "-Xmx8g -Djavax.net.ssl.keyStorePassword=" + REDACTED},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        {"name": "PORT", "value": None}]


@pytest.mark.parametrize("key", ["args", "command"])
def test_flag_values_and_named_settings_in_args_and_command_are_hidden(key):
    items = ["vllm", "--hf-token", "hunter2", "--port", 8000, "--api-key", "--served-model-name", "llama",
             "--db-password=hunter3", "--secret-name", "hf"]
    out = for_bundle(_deployment({"name": "vllm", key: items}))
    assert out["spec"]["template"]["spec"]["containers"][0][key] == [
        "vllm", "--hf-token", REDACTED, "--port", 8000, "--api-key", "--served-model-name", "llama",
        "--db-password=" + REDACTED, "--secret-name", "hf"]


def test_a_value_after_a_non_string_argument_is_not_taken_for_a_flags_value():
    out = for_bundle(_deployment({"name": "vllm", "args": ["--hf-token", 8000, "llama", "--api-key", "k3y",
                                                          "meta-llama/Meta-Llama-3-8B"]}))
    assert out["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "--hf-token", 8000, "llama", "--api-key", REDACTED, "meta-llama/Meta-Llama-3-8B"]   # one value per flag


def test_every_container_list_of_a_nested_template_is_hidden():
    container = {"name": "w", "env": [{"name": "DB_PASSWORD", "value": "hunter2"}], "args": ["--hf-token", "x1"]}
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "pretrain"},
              "spec": {"replicatedJobs": [{"name": "workers", "template": {"spec": {"template": {"spec": {
                  "initContainers": [dict(container)], "containers": [dict(container)],
                  "ephemeralContainers": [dict(container)]}}}}}]}}
    text = repr(for_bundle(jobset))
    assert "hunter2" not in text and "x1" not in text and text.count(REDACTED) == 6


@pytest.mark.parametrize("wrap", ["dict", "list", "mixed"])
def test_the_masked_copy_is_cut_past_100_levels_and_kept_to_them(wrap):
    def nest(depth):
        doc = "info"
        for i in range(depth):
            doc = ({"k": doc} if (wrap == "dict" or (wrap == "mixed" and i % 2)) else [doc])
        return doc
    top = lambda depth: {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": nest(depth)}   # noqa: E731
    assert _leaf(for_bundle(top(99))["data"]) == "info"          # the leaf at depth 100
    assert _leaf(for_bundle(top(100))["data"]) == REDACTED       # at depth 101: cut


@pytest.mark.parametrize("kind", ["StatefulSet", "ServiceAccount", "Service"])
def test_only_a_secret_is_cut_to_its_metadata(kind):
    """Kinds that sort after "Secret" keep their spec."""
    obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "chat"}, "spec": {"replicas": 2}}
    assert for_bundle(obj) == obj


def test_a_name_that_is_not_a_string_neither_keeps_nor_breaks_masking():
    """A server (or a hand-written bundle) may send any JSON where a name belongs."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 1234, "namespace": ["ml"]},
          "data": {"hub": f"token {HF}"}}
    assert for_bundle(cm)["data"] == {"hub": "token <redacted:hf-token>"}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": 1234, "annotations": {"note": f"was {HF}"}}}
    assert secret_metadata(secret)["metadata"] == {"name": 1234, "annotations": {"note": "was <redacted:hf-token>"}}


def test_a_pod_template_nested_deeper_than_40_levels_has_its_named_values_hidden_too():
    """The copy is cut 101 levels down; every container list above that has its named values hidden (a bound
    of 40 here left those between 41 and 100 levels down with their passwords shown)."""
    container = {"name": "w", "env": [{"name": "DB_PASSWORD", "value": "hunter2"}], "args": ["--hf-token", "x1"]}
    for depth in (10, 41, 60, 94):
        spec = _nested(depth, {"containers": [dict(container, env=[dict(container["env"][0])], args=["--hf-token", "x1"])]})
        out = for_bundle({"apiVersion": "example.com/v1", "kind": "Pipeline", "metadata": {"name": "p"}, "spec": spec})
        assert "hunter2" not in repr(out) and "'x1'" not in repr(out), depth
