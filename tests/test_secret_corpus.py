"""Masking measured on a corpus: real secret shapes (public formats; values made up) must all be masked, each
under its own label, and real harmless look-alikes from GPU workloads' logs and objects never."""
import pytest

from kubectl_gpudoctor.safety import redact

R = "Ab3dEf5gHi7jKl9mNo1pQr2sTu4vWx6yZa8bCd0eFg1hIj2kLm3nOp4qRs5tUv6wXy7z"   # base62-looking filler
HEX40 = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
HEX64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
PEM_KEY = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
           "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----")
JWT = ("eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50Iiwic3ViIjoic3lzdGVtIn0"
       ".dGhpcy1pcy1ub3QtYS1yZWFsLXNpZ25hdHVyZQ")

# (text in which the secret appears, the secret value, its label)
SECRETS = [
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
    ("creds: ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A", "aws-access-key"),
    ("export S3_KEY_AKIAJ2XQ7PLMN4RT5WZB", "AKIAJ2XQ7PLMN4RT5WZB", "aws-access-key"),   # after `_`
    ("\x1b[32mAKIAZ7Y6X5W4V3U2T1S0\x1b[0m loaded", "AKIAZ7Y6X5W4V3U2T1S0", "aws-access-key"),   # inside colors
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "aws-secret-key"),
    ("git clone https://x:ghp_" + R[:36] + "@github.com/o/r", "ghp_" + R[:36], "github-token"),
    ("GITHUB_TOKEN=gho_" + R[1:37], "gho_" + R[1:37], "github-token"),
    ("token ghu_" + R[2:38], "ghu_" + R[2:38], "github-token"),
    ("ghs_" + R[3:39] + " expires", "ghs_" + R[3:39], "github-token"),
    ("refresh=ghr_" + R[4:40], "ghr_" + R[4:40], "github-token"),
    ("github_pat_11ABCDEFG0" + R[:59], "github_pat_11ABCDEFG0" + R[:59], "github-token"),
    ('{"token":"glpat-' + R[:20] + '"}', "glpat-" + R[:20], "gitlab-token"),
    ("CI_DEPLOY_TOKEN=gldt-" + R[5:25], "gldt-" + R[5:25], "gitlab-token"),
    ("SLACK_BOT=xoxb-123456789012-1234567890123-" + R[:24], "xoxb-123456789012-1234567890123-" + R[:24],
     "slack-token"),
    ("user token xoxp-123456789012-123456789012-1234567890123-" + R[:32][:32],
     "xoxp-123456789012-123456789012-1234567890123-" + R[:32], "slack-token"),
    ("app=xapp-1-A0123456789-1234567890123-" + HEX64, "xapp-1-A0123456789-1234567890123-" + HEX64, "slack-token"),
    ("POST https://hooks.slack.com/services/T0123ABCD/B0456EFGH/" + R[:24], "T0123ABCD/B0456EFGH/" + R[:24],
     "slack-webhook"),
    ("HF_TOKEN=hf_" + R[:34], "hf_" + R[:34], "hf-token"),
    ("huggingface-cli login --token hf_" + R[6:40], "hf_" + R[6:40], "hf-token"),
    ("OPENAI_API_KEY=sk-" + R[:48], "sk-" + R[:48], "api-key"),
    ("Authorization: Bearer sk-proj-" + R[:60] + "_" + R[:40], "sk-proj-" + R[:60] + "_" + R[:40], "openai-key"),
    ("key=sk-svcacct-" + R[:50], "sk-svcacct-" + R[:50], "openai-key"),
    ("x-api-key: sk-ant-api03-" + R[:60] + "-" + R[:20] + "AA", "sk-ant-api03-" + R[:60] + "-" + R[:20] + "AA",
     "anthropic-key"),
    ("https://generativelanguage.googleapis.com/v1?key=AIzaSyA" + R[:32], "AIzaSyA" + R[:32], "google-api-key"),
    ("access_token=ya29.a0AfH6SM" + R[:40], "ya29.a0AfH6SM" + R[:40], "google-oauth-token"),
    ("STRIPE=sk_live_" + R[:24], "sk_live_" + R[:24], "stripe-key"),
    ("restricted rk_live_" + R[3:27], "rk_live_" + R[3:27], "stripe-key"),
    ("webhook secret whsec_" + R[:32], "whsec_" + R[:32], "stripe-key"),
    ("Authorization: Bearer " + JWT, JWT, "jwt"),
    ("NGC_API_KEY=nvapi-" + R[:64], "nvapi-" + R[:64], "ngc-key"),
    ("DefaultEndpointsProtocol=https;AccountName=ckpts;AccountKey=" + R[:64] + "AbCdEfGhIjKlMnOpQrStUv==;"
     "EndpointSuffix=core.windows.net", R[:64] + "AbCdEfGhIjKlMnOpQrStUv==", "azure-key"),
    ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=" + R[:43] + "=",
     R[:43] + "=", "azure-key"),
    ("https://ckpts.blob.core.windows.net/c/m.pt?sv=2022-11-02&sr=b&sig=" + R[:43] + "%3D",
     R[:43] + "%3D", "azure-sas"),
    ("tls.key: |\n" + PEM_KEY, PEM_KEY.splitlines()[1], "private-key"),
    ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49\n"
     "-----END EC PRIVATE KEY-----", "MHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49", "private-key"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
     "-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
     "private-key"),
    ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n(truncated)",
     "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj", "private-key"),
    ("DATABASE_URL=postgres://app:Pg-pr0d-2026!x@db.prod.svc:5432/app", "Pg-pr0d-2026!x", "password"),
    ("mongodb+srv://trainer:p@ss@w0rd@cluster0.mongodb.net/runs", "p@ss@w0rd", "password"),
    ("amqp://celery:ab/cd+ef@rabbitmq:5672//", "ab/cd+ef", "password"),
    ('{"url":"https:\\/\\/robot:t0pS3cret@registry.example.com\\/v2\\/"}', "t0pS3cret", "password"),
    ("redis://:r3dis-pass@redis-master:6379/0", "r3dis-pass", "password"),
    ("WANDB_API_KEY=" + HEX40, HEX40, "wandb-key"),
    ("$ wandb login " + HEX40[::-1], HEX40[::-1], "wandb-key"),
    ("caBundle-that-is-a-key: MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDx3k7vQ",
     "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDx3k7vQ", "secret"),
    ("signing key 9Xk2mQ7vR4tL8pW3nZ6yB1cF5hJ0dS7gA2eK4uY8oI3w", "9Xk2mQ7vR4tL8pW3nZ6yB1cF5hJ0dS7gA2eK4uY8oI3w", "secret"),
]

# Real text of GPU workloads (logs, events, object fields) that looks like a secret and is not.
HARMLESS = [
    "sk-learn-inference-7d9f8b6c5-x2x9q",                                           # a scikit-learn service's pod
    "kubectl logs sk-learn-serving-0 -n sk-telecom-ml -c server --previous --tail=80",
    "nvcr.io/nvidia/pytorch:24.05-py3",
    "nvcr.io/nvidia/tritonserver@sha256:" + HEX64,
    "docker-pullable://nvcr.io/nvidia/k8s-device-plugin@sha256:" + HEX64,
    "containerd://" + HEX64,
    "registry.gitlab.com/acme/ml/serve:MR1234-4fG7hJ9kL2mN5pQ8rS1tU4vW7xY0zA3b",   # a mixed-case CI tag
    "ghcr.io/acme/llm-router:sha-Ab3dEf5gHi7jKl9mNo1pQr2sTu4vWx6y",
    "uid: 0c8f3a51-2d6e-4b7a-9c1f-5e8d2a4b6c90",
    "CUDA_VISIBLE_DEVICES=GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b",
    "MIG-4f1d2a3b-6c5e-5a7f-8b9c-0d1e2f3a4b5c",
    "botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the GetObject operation: "
    "Access Denied (RequestId: 4442587FB7D0A2F9)",
    "HostId: Ebn9cIYkm8Zld6aGyBnPcUPVLO+vBbnI1cITjRjJgWvfvDeE4TdUVoYH+d9z7MUxFgLOaK5TPA4=",
    "x-amz-id-2: vlR7PnpV2Ce81l0PRw6jlUpck7Jo5ZsQjryTjKlc5aLWGVHPZLj5NeC6qMa0emYBDXOo6QBU0Wo=",
    "RequestId: 5f1a6b2c-3d4e-4f50-8a9b-0c1d2e3f4a5b",
    '<script src="x.js" integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC">',
    "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
    "caBundle: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFW",
    "certificate-authority-data: MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTESMBAGA1UE",
    "metadata.continue: eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDU2LCJzdGFydCI6InNlcnZpbmcvY2hhdC02YjdjOWQ4ZjQifQ",
    "[TRT] [I] Plugin creator found: CustomQKVToContextPluginDynamicVersion2Int8",
    "[TRT] Loaded engine: DisentangledAttentionPluginDynamicFp16Kernel2",
    "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage3_warpsize2x2x1",
    "commit " + HEX40,
    "pip install --hash=sha256:" + HEX64,
    "NCCL INFO Channel 00/24 :    0   1   2   3   4   5   6   7",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
    "ip-10-0-12-34.ec2.internal",
    "gke-ml-pool-a100-3f2a1b4c-x9kz",
    "vllm-llama-3-70b-instruct-6b7c9d8f4",
    "sh.helm.release.v1.triton.v3",
    "meta-llama/Meta-Llama-3-70B-Instruct",
    "https://huggingface.co/api/models/meta-llama/Llama-2-7b-chat-hf/revision/main",
    "https://oauth2@gitlab.example.com/acme/models.git",
    "s3://my-bucket/checkpoints/step-1000/model-00001-of-00004.safetensors",
    "https://registry:5000/v2/acme/img/manifests/latest@sha256",
    "nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB",
    "PCI bus id 00000000:3B:00.0, NVML_ERROR_GPU_IS_LOST",
    "wandb: Syncing run 2f8x9k3m to https://wandb.ai/acme/llm/runs/2f8x9k3m",
    "tokenizer_config.json: 100%|##########| 1.2k/1.2k [00:00<00:00, 4.1MB/s]",
    "--max-num-batched-tokens=8192 --tokenizer-mode auto",
    'Successfully pulled image "nvcr.io/nvidia/tritonserver:24.05-trtllm-python-py3" in 1m2.3s',
    "/var/run/secrets/kubernetes.io/serviceaccount/token",
    "etag: W/\"5f2a1b4c3d6e7f8091a2b3c4d5e6f708\"",
    "ray.init(address='ray://raycluster-head-svc:10001')",
    "task-4f2a1b4c5d6e7f8091a2b3c4d5e6f70",
]
# Kubernetes names (a sk-… namespace, pod, image) are kept once read from the cluster, whatever their shape.
NAMES = ["sk-proj-llama-inference-7d9f8b6c5-x2x9q", "sk-ant-api03-telecom-ml-serving-prod-cluster",
         "registry.example.com/sk-proj-embeddings/server:v1", "hf-tokenizer-svc-0"]
# Each promised shape at the shortest length its pattern accepts: its own label must win over the generic mask.
SHORTEST = [
    ("hf_Ab3dEf5gHi7jKl9m", "hf-token"), ("ghp_Ab3dEf5gHi7jKl9mNo1p", "github-token"),
    ("github_pat_Ab3dEf5gHi7jKl9mNo1p", "github-token"), ("glpat-Ab3dEf5gHi7jKl9mNo1p", "gitlab-token"),
    ("xoxb-12345abcde", "slack-token"), ("xapp-1-A012345678", "slack-token"),
    ("hooks.slack.com/services/T012345/B012345/Ab3dEf5gHi7jKl9m", "slack-webhook"),
    ("sk-Ab3dEf5gHi7jKl9mNo1p", "api-key"), ("sk-proj-Ab3dEf5gHi7jKl9mNo1p", "openai-key"),
    ("sk-ant-a1-Ab3dEf5gHi7jKl9mNo1p", "anthropic-key"), ("sk_live_Ab3dEf5gHi7jKl9mNo1p", "stripe-key"),
    ("whsec_Ab3dEf5gHi7jKl9mNo1pQr2s", "stripe-key"), ("AIza" + R[:35], "google-api-key"),
    ("ya29.Ab3dEf5gHi7jKl9mNo1p", "google-oauth-token"), ("AKIAB3DEF5GHI7JKL9MN", "aws-access-key"),
    ("ASIAB3DEF5GHI7JKL9MN", "aws-access-key"), ("eyJhbGciOiJI.eyJzdWIiOiIx.Sfl", "jwt"),
    ("nvapi-Ab3dEf5gHi7jKl9mNo1p", "ngc-key"), ("AccountKey=Ab3dEf5gHi7jKl9mNo1p", "azure-key"),
    ("?sig=Ab3dEf5gHi7jKl9mNo1p", "azure-sas"), ("-----BEGIN PRIVATE KEY-----x", "private-key"),
    ("WANDB_API_KEY=" + HEX40, "wandb-key"), ("aws_secret_access_key=" + R[:40], "aws-secret-key"),
    ("s3://u:p@h", "password"),
]


def _found(text, value, label):
    out, n = redact.mask(text)
    return n > 0 and value not in out and f"<redacted:{label}>" in out


def test_corpus_recall_and_false_positives(capsys):
    """Recall on the secret shapes and false positives on the look-alikes, reported; 100 % and 0 required."""
    assert len(SECRETS) >= 40 and len(HARMLESS) >= 40
    missed = [(t, label) for t, v, label in SECRETS if not _found(t, v, label)]
    flagged = [(t, redact.mask(t)[0]) for t in HARMLESS if redact.mask(t)[1]]
    with capsys.disabled():
        print(f"\nsecret corpus: recall {len(SECRETS) - len(missed)}/{len(SECRETS)}, "
              f"false positives {len(flagged)}/{len(HARMLESS)}")
    assert not missed, missed
    assert not flagged, flagged


@pytest.mark.parametrize("value,label", SHORTEST, ids=[label + "-" + v[:8] for v, label in SHORTEST])
def test_each_shape_at_its_shortest_gets_its_own_label(value, label):
    out, n = redact.mask(f"x {value} y")
    assert n == 1 and f"<redacted:{label}>" in out, out


BOUNDED = [(v, label) for v, label in SHORTEST if label not in ("private-key", "password", "jwt")]   # delimited


@pytest.mark.parametrize("value,label", BOUNDED, ids=[label + "-" + v[:8] for v, label in BOUNDED])
def test_one_character_short_of_a_length_bound_is_not_that_shape(value, label):
    """The lengths are real bounds: a shorter value is not given that label (the pattern does not sprawl)."""
    short = value[:-1]
    assert f"<redacted:{label}>" not in redact.mask(f"x {short} y")[0]


def test_names_read_from_the_cluster_are_never_masked():
    for name in NAMES:
        redact.remember_names({"metadata": {"name": name, "namespace": "ns"}})
        redact.remember_names({"metadata": {"name": "p", "namespace": name}, "spec": {"containers": [{"image": name}]}})
    for name in NAMES:
        text = f"kubectl describe pod {name} -n {name}"
        assert redact.mask(text) == (text, 0)
    # a secret next to a name is still masked
    out, n = redact.mask(f"pod {NAMES[0]} leaked sk-proj-{R[:30]}")
    assert n == 1 and NAMES[0] in out and "<redacted:openai-key>" in out


def test_named_settings_and_flags_are_hidden():
    s = redact.named_settings
    assert s("-Xmx8g -Djavax.net.ssl.keyStorePassword=changeit -Dfile.encoding=UTF-8") == \
        "-Xmx8g -Djavax.net.ssl.keyStorePassword=<redacted> -Dfile.encoding=UTF-8"
    assert s("--api-key=abc123") == "--api-key=<redacted>"
    assert s("python serve.py --hf-token abc123 --port 8000") == "python serve.py --hf-token <redacted> --port 8000"
    for harmless in ("--max-num-batched-tokens=8192", "--tokenizer=meta-llama/Llama-3", "--secret-name=hf-token",
                     "--port=8000"):
        assert s(harmless) == harmless
