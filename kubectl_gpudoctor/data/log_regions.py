"""How the end of a crashed container's log is read: which lines mark a failure, which belong to a traceback,
which say a step succeeded, and which are only retry notices. Data only."""

# Lines that are not a failure even though they contain failure words: retries that continue, and
# huggingface_hub's own best-effort warnings (huggingface/huggingface_hub#4304).
NOT_FATAL = (r"(?i)will ignore error and continue|continuing without|retrying in|will retry|, retrying|retry \d+/\d+"
             r"|attempt \d+ (?:of|/) ?\d+ failed, retrying")

# torch.distributed / NCCL rendezvous failures belong to nccl-failure, not to dependency-unreachable.
DISTRIBUTED = r"(?i)c10d|nccl|gloo|rendezvous|TCPStore|MASTER_ADDR|torch\.distributed|elastic"

# A failure line: a log level, an exception, a panic — the start of the region a crash leaves at the end of a log.
ERRORISH = (r"\b(?:ERROR|FATAL|CRITICAL|PANIC|Error|Exception|Traceback|panic)\b|level=(?:error|fatal|panic)"
            r"|^[EF]\d{4} |Killed$|Aborted|core dumped|Segmentation fault|\bfailed\b|\brefused\b|\bdenied\b|not found")
# Lines that belong to a traceback or stack dump rather than to the program's normal output.
TRACEBACK = (r"^\s|^File \"|^Traceback|^During handling|^The above exception|^\^+$|^Process \w+Process-\d+:"
             r"|^goroutine \d+|^\s*at |^Caused by:|^\[rank\d+\]:")
# A line that says a connection or start-up step succeeded: a crash region never reaches back past it.
SUCCESS = (r"(?i)\b(?:connected|connection established|established connection|ready|listening|started|loaded|succeeded|success)\b"
           r"|\"(?:GET|POST) /\S* HTTP/[\d.]+\" 200")

# Exceptions that only wrap a root cause printed above them; app-error quotes the real error instead. vLLM V1
# "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}" (gpustack/gpustack#2723),
# "Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root
# cause." and "WorkerProc failed to start." (vllm-project/vllm#18455, #47415), "EngineCore failed to start."; vLLM V0
# "RuntimeError: Engine process failed to start. See stack trace for the root cause." (vllm-project/vllm#11994);
# "RuntimeError: Worker failed with error '...', please check the stack trace above for the root cause"
# (vllm-project/vllm#16655, #17693); torchrun's "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:" and
# "failed (exitcode: 1) local_rank: 0 (pid: 52) of binary" (E0801 glog, "ERROR:torch.distributed..." and "[ERROR]" forms).
WRAPPER = (r"Engine core initialization failed\. See root cause above|Engine process failed to start\. See stack trace"
           r"|WorkerProc initialization failed due to an exception|WorkerProc failed to start|EngineCore failed to start"
           r"|Worker failed with error .*please check the stack trace above|elastic\.multiprocessing\.errors\.ChildFailedError"
           r"|failed \(exitcode: -?\d+\) local_rank: \d+")
# torchrun's report after ChildFailedError, one block per failed rank (Vision-CAIR/MiniGPT-4#237, hpcaitech/ColossalAI#3571):
# neither a failure line nor program output, so the failure region reaches over it to the ranks' own errors above.
ELASTIC_REPORT = (r"^(?:={20,}|-{20,}|\S+ FAILED|Failures:|Root Cause \(first observed failure\):|\s*<NO_OTHER_FAILURES>"
                  r"|\[\d+\]:|\s+(?:time|host|rank|exitcode|error_file|traceback)\s*:.*)\s*$")

# A text table a server prints as its status report, e.g. Triton's model table after loading ("+-----+---------+" borders,
# "| llama3 | 1 | UNAVAILABLE: Internal: OSError: ... |" rows; awslabs/data-on-eks#605): layout like torchrun's report,
# so a READY row for another model neither ends nor starts the failure region.
TABLE = r"^\s*\+[-=+]+\+\s*$|^\s*\|.*\|\s*$"

# Per-process and logger prefixes before the message: kubectl --timestamps, vLLM's "(APIServer pid=1) " /
# "(Worker_TP0 pid=321) ", torch.distributed's "[rank0]: ", vLLM's logger tag "ERROR 04-23 09:57:19 [core.py:708] ".
LINE_PREFIX = (r"^(?:\d{4}-\d\d-\d\dT\S+\s)?(?:\([^)]*pid=\d+[^)]*\) ?|\[rank\d+\]: ?"
               r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\d-]+ [\d:.]+ (?:\[)?[\w.]+:\d+\]? )*")
