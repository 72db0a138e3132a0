"""What model servers print while they start and once they serve (vLLM, TGI, Triton, SGLang, llama.cpp,
TorchServe), and how their log lines carry time and progress. Data only."""

# Server-start vocabulary. READY: the process reached serving (vLLM/uvicorn, TGI router, Triton, SGLang,
# llama.cpp, TorchServe), including access-log lines for served requests. LOADING: still starting.
READY = (
    r"Application startup complete", r"Uvicorn running on", r"Starting vLLM API server", r"text_generation_router.*Connected",
    r"Started (?:HTTPService|GRPCInferenceService|Metrics Service) at", r"The server is fired up and ready to roll",
    r"(?:HTTP )?server (?:is )?listening on", r"Model server started", r"\"(?:GET|POST) /\S* HTTP/[\d.]+\" 200",
)
LOADING = (
    r"(?i)Loading (?:safetensors |pt |)checkpoint shards", r"(?i)starting to load model", r"(?i)loading (?:model )?weights",
    r"(?i)\bdownload(?:ing)?\b", r"Fetching \d+ files", r"(?i)waiting for shard", r"(?i)starting shard",
    r"(?i)capturing (?:cuda ?graphs|cudagraphs|the model for cuda graphs)", r"(?i)\bcompil(?:ing|e)\b", r"(?i)memory profiling",
    r"(?i)Initializing an? (?:LLM|V1 LLM) engine", r"(?i)\bloading\b", r"(?<!\d)\d+%\|", r"(?<!\d)\d+/\d+ \[\d+:\d+<",
)
# Progress lines that say how long loading still takes: tqdm `50% Completed | 2/4 [00:19<00:19,  9.60s/it]`
# (vLLM, transformers) and TGI's downloader `Download: [2/4] -- ETA: 0:04:51`.
PROGRESS = (
    r"(?<!\d)(?P<pct>\d+)%.{0,200}?\[(?P<elapsed>\d+(?::\d+){1,2})<(?P<left>\d+(?::\d+){1,2})",
    r"Download: \[(?P<done>\d+)/(?P<total>\d+)\] -- ETA: (?P<left>\d+(?::\d+){1,2})",
)

# Timestamps at the start of a log line: ISO (TGI, Go, most loggers), vLLM `INFO 11-30 09:12:21`,
# glog/Triton `I1130 09:12:21.123456`. Year-less forms take the year of the container start.
LOG_TIME = (
    r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)",
    r"^(?:\(\w+ pid=\d+\) )?(?:INFO|WARNING|WARN|DEBUG|ERROR) (?P<mo>\d\d)-(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)",
    r"^[IWE](?P<mo>\d\d)(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)",
)
