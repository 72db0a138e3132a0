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
