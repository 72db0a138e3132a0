"""dcgm-exporter /metrics text for test cases, shaped as dcgm-exporter 3.3 writes it: its HELP/TYPE lines from
etc/default-counters.csv (plus the ECC, row-remap and clock-event fields a custom counters file enables), its labels
(gpu, UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION, then container/namespace/pod from the
kubelet's pod-resources API; err_code/err_msg on DCGM_FI_DEV_XID_ERRORS); run as a script to rewrite the cases."""
from __future__ import annotations

from pathlib import Path

HELP = {
    "DCGM_FI_DEV_SM_CLOCK": ("gauge", "SM clock frequency (in MHz)."),
    "DCGM_FI_DEV_GPU_TEMP": ("gauge", "GPU temperature (in C)."),
    "DCGM_FI_DEV_POWER_USAGE": ("gauge", "Power draw (in W)."),
    "DCGM_FI_DEV_GPU_UTIL": ("gauge", "GPU utilization (in %)."),
    "DCGM_FI_DEV_XID_ERRORS": ("gauge", "Value of the last XID error encountered."),
    "DCGM_FI_DEV_FB_FREE": ("gauge", "Framebuffer memory free (in MiB)."),
    "DCGM_FI_DEV_FB_USED": ("gauge", "Framebuffer memory used (in MiB)."),
    "DCGM_FI_DEV_FB_RESERVED": ("gauge", "Framebuffer memory reserved (in MiB)."),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("counter", "Total number of double-bit volatile ECC errors."),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": ("counter", "Number of remapped rows for uncorrectable errors"),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": ("counter", "Number of remapped rows for correctable errors"),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("gauge", "Whether remapping of rows has failed"),
    "DCGM_FI_DEV_ROW_REMAP_PENDING": ("gauge", "Whether remapping of rows is pending"),
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": ("gauge", "Current clock event reasons (bitmask)."),
}
H100 = "NVIDIA H100 80GB HBM3"
UUIDS = ["GPU-3f2c1a9e-7b41-4d0e-9a55-0c6e8d2b71f4", "GPU-8a91d3c2-55e0-4f7b-b1c9-2e4d6f80a913",
         "GPU-c04e7f12-9d3a-4b68-8e21-5f7a0b3c9d46", "GPU-5c2b9e7a-1f3d-4e8a-9b6c-2d7f0a4e1c93",
         "GPU-e7a0c5d9-3b12-4f86-a94e-7d1c2b6f0e58", "GPU-19d4b7e3-6c20-4a5f-8d13-b9e0f2c7a641",
         "GPU-a6f3e1b8-0d47-4c92-9e75-3b8d1a0c5f27", "GPU-72c8a0f5-e9b3-4d16-a2c4-6f0e9b1d3a85"]


def exposition(host: str, gpus: list, pod_labels: bool = True, driver: str = "550.127.05") -> str:
    """`gpus`: dicts with index and optional pod=(ns, pod, container), temp, fb_used, xid, dbe, remap_pending,
    remap_failure, reasons, model."""
    lines = []
    for metric, (typ, text) in HELP.items():
        lines += [f"# HELP {metric} {text}", f"# TYPE {metric} {typ}"]
        for g in gpus:
            i = g["index"]
            lab = (f'gpu="{i}",UUID="{UUIDS[i]}",pci_bus_id="00000000:{0x18 + 0x10 * i:02X}:00.0",device="nvidia{i}",'
                   f'modelName="{g.get("model", H100)}",Hostname="{host}",DCGM_FI_DRIVER_VERSION="{driver}"')
            holders = g.get("pods") or [g.get("pod") or ("", "", "")]   # a shared GPU repeats its series per pod
            used = g.get("fb_used", 0)
            value = {"DCGM_FI_DEV_SM_CLOCK": 1980, "DCGM_FI_DEV_GPU_TEMP": g.get("temp", 41),
                     "DCGM_FI_DEV_POWER_USAGE": 512.3 if used else 71.2, "DCGM_FI_DEV_GPU_UTIL": 97 if used else 0,
                     "DCGM_FI_DEV_XID_ERRORS": g.get("xid", 0), "DCGM_FI_DEV_FB_FREE": 81559 - used - 520,
                     "DCGM_FI_DEV_FB_USED": used, "DCGM_FI_DEV_FB_RESERVED": 520,
                     "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": g.get("dbe", 0),
                     "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": g.get("uncorrectable_rows", 0),
                     "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": 0,
                     "DCGM_FI_DEV_ROW_REMAP_FAILURE": int(g.get("remap_failure", False)),
                     "DCGM_FI_DEV_ROW_REMAP_PENDING": int(g.get("remap_pending", False)),
                     "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": g.get("reasons", 0)}[metric]
            if metric == "DCGM_FI_DEV_XID_ERRORS":
                from kubectl_gpudoctor.data.xid import meaning
                code = g.get("xid", 0)
                lab += f',err_code="{code}",err_msg="{meaning(code) if code else "No Error"}"'
            for ns, pod, container in holders if pod_labels else [("", "", "")]:
                who = f',container="{container}",namespace="{ns}",pod="{pod}"' if pod_labels else ""
                lines.append(f"{metric}{{{lab}{who}}} {value}")
    return "\n".join(lines) + "\n"


CASES = Path(__file__).parent / "cases"


def write(case: str, host: str, gpus: list, exporter: str, ns: str = "gpu-operator", **kw) -> None:
    path = CASES / case / "metrics" / ns / f"{exporter}.prom"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(exposition(host, gpus, **kw))


def _all(host, pod, overrides=None):
    """Eight H100s held by one 8-GPU pod, with per-GPU overrides {index: {...}}."""
    return [dict({"index": i, "pod": pod, "fb_used": 71234, "temp": 58}, **(overrides or {}).get(i, {})) for i in range(8)]


def node_cases() -> None:
    trainer = ("training", "trainer-llm-1", "trainer")
    h, exp = "gpu-h100-15", "nvidia-dcgm-exporter-2zdxk"
    write("gpu-xid-critical/pass-healthy-gpus", h, _all(h, trainer), exp)
    write("gpu-xid-critical/fail-xid-79-fallen-off-bus", h, _all(h, trainer, {3: {"xid": 79, "fb_used": 0}}), exp)
    write("gpu-xid-critical/fail-xid-48-double-bit-ecc", h, _all(h, trainer, {5: {"xid": 48, "dbe": 2}}), exp)
    write("gpu-xid-critical/fail-xid-94-no-pod-labels", h, _all(h, trainer, {1: {"xid": 94}}), exp,
          pod_labels=False)
    write("gpu-xid-critical/pass-xid-13-application-fault", h, _all(h, trainer, {2: {"xid": 13}}), exp)
    write("gpu-memory-errors/fail-row-remap-pending", h,
          _all(h, trainer, {6: {"xid": 63, "remap_pending": True, "uncorrectable_rows": 1}}), exp)
    write("gpu-memory-errors/pass-healthy-gpus", h, _all(h, trainer), exp)
    write("gpu-throttled/fail-thermal-slowdown", h, _all(h, trainer, {4: {"temp": 91, "reasons": 0x40 | 0x20}}), exp)
    write("gpu-throttled/pass-idle-clocks", h, _all(h, trainer, {4: {"reasons": 0x1}}), exp)


def crashing_trainer_case(case: str, log: str) -> None:
    """The healthy gpu-h100-15 node case with its 8-GPU trainer in CrashLoopBackOff after `log`, as a pod bundle."""
    import yaml
    base = CASES / "gpus-unhealthy" / "pass-all-allocated-not-unhealthy"
    docs = [d for d in yaml.safe_load_all((base / "objects.yaml").read_text()) if d]
    for d in docs:
        if d["kind"] == "Pod" and d["metadata"]["name"] == "trainer-llm-1":
            st = d["status"]
            for c in st["conditions"]:
                if c["type"] in ("Ready", "ContainersReady"):
                    c.update(status="False", reason="ContainersNotReady",
                             message="containers with unready status: [trainer]", lastTransitionTime="2026-11-30T09:41:12Z")
            cs = st["containerStatuses"][0]
            cs.update(ready=False, started=False, restartCount=4, state={"waiting": {
                "reason": "CrashLoopBackOff",
                "message": "back-off 1m20s restarting failed container=trainer pod=trainer-llm-1_training"
                           "(3e46c7b9-5f67-4f85-a2d0-34a1ac3c9d26)"}},
                lastState={"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-11-30T09:52:40Z",
                                          "finishedAt": "2026-11-30T09:58:03Z", "containerID": cs["containerID"]}})
    out = CASES / case
    (out / "logs" / "training" / "trainer-llm-1").mkdir(parents=True, exist_ok=True)
    (out / "objects.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    (out / "bundle.yaml").write_text("apiVersion: gpudoctor/v1\nkind: Bundle\ncollectedAt: '2026-11-30T10:00:00Z'\n"
                                     "target:\n  kind: Pod\n  namespace: training\n  name: trainer-llm-1\n")
    (out / "logs" / "training" / "trainer-llm-1" / "trainer.previous.log").write_text(log)


# PyTorch's wording for a CUDA error raised by the runtime (c10/cuda/CUDAException), per rank under torchrun.
ECC_LOG = """[rank5]: Traceback (most recent call last):
[rank5]:   File "/opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py", line 38, in main
[rank5]:     trainer.fit(model)
[rank5]: RuntimeError: CUDA error: uncorrectable ECC error encountered
[rank5]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
[rank5]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1
[rank5]: Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""
ILLEGAL_LOG = ECC_LOG.replace("uncorrectable ECC error encountered", "an illegal memory access was encountered")


# PyTorch's CUDA allocator wording (torch.OutOfMemoryError), as in the gpu-out-of-memory cases.
OOM_LOG = ("[rank0]: Traceback (most recent call last):\n"
           '[rank0]:   File "/workspace/train.py", line 212, in <module>\n'
           "[rank0]:     loss = model(batch).loss\n"
           "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
           "of 79.10 GiB of which 1.31 GiB is free. Process 118022 has 38.77 GiB memory in use. Including non-PyTorch "
           "memory, this process has 38.94 GiB memory in use. Of the allocated memory 36.12 GiB is allocated by "
           "PyTorch, and 1.21 GiB is reserved by PyTorch but unallocated.\n")


def shared_gpu_case(case: str, neighbour_mib: int) -> None:
    """Time-slicing (4 replicas per GPU): the trainer (1 replica) crashed with a CUDA OOM on GPU 0, which a notebook
    shares; `neighbour_mib` of GPU 0 in use when the exporter was read."""
    import yaml
    crashing_trainer_case(case, OOM_LOG)
    path = CASES / case / "objects.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    for d in docs:
        if d["kind"] == "Node":
            d["metadata"]["labels"].update({"nvidia.com/gpu.sharing-strategy": "time-slicing",
                                            "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.product":
                                            "NVIDIA-H100-80GB-HBM3-SHARED"})
            d["status"]["capacity"]["nvidia.com/gpu"] = d["status"]["allocatable"]["nvidia.com/gpu"] = "32"
        if d["kind"] == "Pod" and d["metadata"]["name"] == "trainer-llm-1":
            res = d["spec"]["containers"][0]["resources"]
            res["limits"]["nvidia.com/gpu"] = res["requests"]["nvidia.com/gpu"] = "1"
            notebook = yaml.safe_load(yaml.safe_dump(d))
    m = notebook["metadata"]
    m.update(name="notebook-0", namespace="research", uid="5b0e2c71-8d4f-4a93-b6e1-2f7c9a0d3e48",
             generateName="notebook-", labels={"app.kubernetes.io/name": "jupyter"})
    m["ownerReferences"][0].update(name="notebook", uid="a3d9f1c2-7e64-4b08-9c5a-61e2f0b7d834")
    notebook["spec"]["containers"][0].update(name="notebook", image="quay.io/jupyter/pytorch-notebook:cuda12-2024-11-25",
                                             args=["start-notebook.py"])
    cs = notebook["status"]["containerStatuses"][0]
    cs.update(name="notebook", image="quay.io/jupyter/pytorch-notebook:cuda12-2024-11-25", ready=True, started=True,
              restartCount=0, state={"running": {"startedAt": "2026-11-30T07:02:11Z"}}, lastState={})
    for c in notebook["status"]["conditions"]:
        c["status"], c.pop("reason", None), c.pop("message", None)
        c["status"] = "True"
    docs.append(notebook)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    h, exp = "gpu-h100-15", "nvidia-dcgm-exporter-2zdxk"
    gpus = [{"index": 0, "fb_used": neighbour_mib, "pods": [("research", "notebook-0", "notebook"),
                                                            ("training", "trainer-llm-1", "trainer")]}]
    write(case, h, gpus + [{"index": i} for i in range(1, 8)], exp)


def pod_cases() -> None:
    trainer = ("training", "trainer-llm-1", "trainer")
    h, exp = "gpu-h100-15", "nvidia-dcgm-exporter-2zdxk"
    crashing_trainer_case("gpu-failed-under-pod/fail-ecc-error-xid-48-same-gpu", ECC_LOG)
    write("gpu-failed-under-pod/fail-ecc-error-xid-48-same-gpu", h, _all(h, trainer, {5: {"xid": 48, "dbe": 1}}), exp)
    crashing_trainer_case("gpu-failed-under-pod/pass-illegal-access-healthy-gpus", ILLEGAL_LOG)
    write("gpu-failed-under-pod/pass-illegal-access-healthy-gpus", h, _all(h, trainer, {5: {"xid": 31}}), exp)
    shared_gpu_case("gpu-shared-memory-full/fail-time-sliced-neighbour-holds-memory", 79700)
    shared_gpu_case("gpu-shared-memory-full/pass-shared-gpu-with-room", 40120)


if __name__ == "__main__":
    node_cases()
    pod_cases()
