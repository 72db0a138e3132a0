"""Log signatures of application-level failures (exec, model files, caches, auth, dependencies); data only, in
the wording real runtimes and libraries print (sources next to each pattern).

Patterns are matched line by line (no anchors across lines); named groups carry what a rule reports:
`path`, `host`, `port`, `why`, `cmd`, `kind`. Lines often carry prefixes such as
`(APIServer pid=33) `, `ERROR 02-20 10:13:40 engine.py:389] ` or `[rank0]: `, so most patterns are unanchored.
"""
from .log_signatures import Signature

_Q = r"['\"`]"   # the quotes Python, Go and shells put around paths and names

APP = (
    # --- the command cannot be started -----------------------------------------------------------
    # dash: `/bin/sh: 1: python: not found`; bash: `/bin/bash: line 1: torchrun: command not found`;
    # busybox: `sh: python: not found`; `#!/usr/bin/env python` without python: `env: 'python': No such file
    # or directory` (exit 127). crun (CRI-O): "executable file `torchrun` not found in $PATH".
    Signature("shell-not-found", "command-not-found",
              r"^(?:/bin/|/usr/bin/)?(?:ba|da|z)?sh: (?:line )?\d*:? ?(?P<cmd>[^:\s]+): (?:command )?not found\s*$",
              "the shell could not find the command"),
    Signature("script-not-found", "command-not-found",
              r"^\S+: line \d+: (?P<cmd>[^:\s]+): (?:command )?not found\s*$", "a script called a missing command"),
    Signature("env-not-found", "command-not-found", r"^(?:/usr/bin/)?env: ['‘](?P<cmd>[^'’]+)['’]: No such file or directory",
              "the #! interpreter named through env does not exist"),
    Signature("crun-not-found", "command-not-found", r"executable file `(?P<cmd>[^`]+)` not found in \$PATH",
              "crun: the command is not in $PATH"),
    # --- found but not executable (exit 126; runc: `exec: "/app/run.sh": permission denied`) -----------
    # kubernetes/kubernetes#72612, containerd/containerd#4182, aabed/kubernetes-configmap-rollouts#3
    Signature("runc-exec-denied", "not-executable", r"exec: \"(?P<cmd>[^\"]+)\": permission denied",
              "runc could not execute the command: no execute permission"),
    # crun (CRI-O, podman): `crun: open executable: Permission denied: OCI permission denied` (earthly/earthly#2267)
    Signature("crun-exec-denied", "not-executable", r"open executable: (?:Permission denied|Operation not permitted)",
              "crun could not execute the command: no execute permission or a noexec mount"),
    Signature("runc-init-denied", "not-executable", r"exec user process caused:? \"?permission denied",
              "runc (before 1.1) could not execute the command"),
    Signature("exec-denied-log", "not-executable", r"^exec (?P<cmd>/\S+): permission denied\s*$",
              "runc 1.1+: the entrypoint is not executable (or is on a noexec mount)"),
    Signature("shell-denied", "not-executable",
              r"^(?:/bin/|/usr/bin/)?(?:ba|da)?sh: (?:line )?\d*:? ?(?P<cmd>/?[^:\s]+): Permission denied\s*$",
              "the shell could not execute a file: no execute permission"),
    # --- wrong CPU architecture (or a script without #!) ------------------------------------------------
    # kubernetes/node-problem-detector#797 `exec /node-problem-detector: exec format error`;
    # canonical/microk8s#1118 `standard_init_linux.go:207: exec user process caused "exec format error"`
    Signature("exec-format-log", "exec-format-error", r"^exec (?P<cmd>\S+): exec format error",
              "the kernel cannot execute the binary: built for another architecture"),
    Signature("exec-format-runc", "exec-format-error", r"exec user process caused:? \"?exec format error",
              "runc could not execute the binary: built for another architecture"),
    Signature("exec-format-start", "exec-format-error", r"exec: \"(?P<cmd>[^\"]+)\": exec format error",
              "the runtime could not execute the binary: built for another architecture"),
    Signature("exec-format-runtime", "exec-format-error",
              r"(?:unable to start container process|starting container process caused)[^\n]*exec format error",
              "the runtime could not execute the binary: built for another architecture"),
    # --- model/config files missing on the path the server reads ------------------------------------------
    Signature("file-not-found", "missing-model-files",
              r"(?:FileNotFoundError|No such file or directory)(?:\])?:? " + _Q + r"(?P<path>[^'\"`]+)" + _Q,
              "a file the program opens does not exist"),
    # transformers: `OSError: /models/x does not appear to have a file named config.json.` (vllm-project/aibrix#834)
    Signature("hf-no-file-named", "missing-model-files",
              r"(?P<path>\S+) does not appear to have a file named (?P<file>[\w.\-]+)", "the model directory lacks a file"),
    Signature("hf-cant-load", "missing-model-files",
              r"Can't load (?:the )?(?:configuration|config|tokenizer|model|weights)(?: of| for) '(?P<path>[^']+)'",
              "transformers cannot load the model/config from that path"),
    Signature("hf-no-weights-in-dir", "missing-model-files",
              r"no file named .+ found in directory (?P<path>\S+?)\.?\s*$", "no weights file in the directory"),
    Signature("hf-not-a-directory", "missing-model-files",
              r"(?P<path>\S+) is not the path to a directory containing a file named (?P<file>[\w.\-]+)",
              "transformers: no such local model and the hub was not reachable"),
    # vLLM >= 0.7.3 (vllm-project/vllm#13724): `Invalid repository ID or local directory specified: '/models/x'`
    Signature("vllm-invalid-local-dir", "missing-model-files",
              r"Invalid repository ID or local directory specified: '(?P<path>[./~][^']*)'",
              "vLLM found no config.json/params.json in the local model directory"),
    # a local path that does not exist is validated as a hub repo id (vllm-project/vllm#12867, gpustack/gpustack#1268)
    Signature("hf-path-as-repo-id", "missing-model-files",
              r"Repo id must (?:be in the form|use alphanumeric chars)[^:]*: '(?P<path>[./~][^']*)'",
              "the model path does not exist, so it was taken for a hub repo id"),
    # transformers >= 4.38 after the hub rejects a path as repo id: `OSError: Incorrect path_or_model_id: '/data/x'.
    # Please provide either the path to a local folder or the `repo_id` of a model on the Hub.`
    Signature("hf-incorrect-path", "missing-model-files", r"Incorrect path_or_model_id: '(?P<path>[./~][^']*)'",
              "transformers: the local model path does not exist"),
    Signature("vllm-no-weights", "missing-model-files", r"Cannot find any model weights with [`'](?P<path>[^`']+)",
              "vLLM found no weights files"),
    # Triton: `error: creating server: Internal - failed to stat file /models` (triton-inference-server/server#1931)
    Signature("triton-stat", "missing-model-files", r"failed to stat file (?P<path>\S+)", "Triton cannot find the path"),
    Signature("triton-unable-to-find", "missing-model-files", r"unable to find '(?P<path>[^']+)' for model instance",
              "Triton cannot find the model file"),
    # llama.cpp: `gguf_init_from_file: failed to open '/models/x.gguf': 'No such file or directory'`;
    # Triton: `failed to open text file for read /models/x/config.pbtxt: No such file or directory`
    Signature("open-enoent-quoted", "missing-model-files",
              r"failed to open (?:text file for read )?'?(?P<path>/[^'\s]+)'?:? '?No such file or directory",
              "a model file the server opens does not exist"),
    Signature("go-open-enoent", "missing-model-files", r"open (?P<path>/\S+): no such file or directory",
              "a Go program cannot open the file"),
    Signature("path-does-not-exist", "missing-model-files",
              r"(?i)(?:model|weights?|checkpoint|config|tokenizer)\S*(?: (?:path|dir|directory|file))?:? "
              r"['\"]?(?P<path>/[\w./@+=-]+)['\"]? (?:does not exist|not found|is not a directory)",
              "the application reports a model path that does not exist"),
    # --- a cache/model path is not writable -----------------------------------------------------------------
    # huggingface/huggingface_hub#2797, OHF-Voice/wyoming-faster-whisper#27, vllm-project/vllm#20127
    Signature("erofs-python", "model-cache-read-only", r"\[Errno 30\] Read-only file system: '(?P<path>[^']+)'",
              "writing to a read-only file system"),
    Signature("erofs-go", "model-cache-read-only", r"(?P<path>/\S+): read-only file system", "writing to a read-only file system"),
    Signature("erofs-rust", "model-cache-read-only", r"Read-only file system \(os error 30\)|kind: ReadOnlyFilesystem",
              "writing to a read-only file system"),
    Signature("eacces-cache", "model-cache-read-only",
              r"\[Errno 13\] Permission denied: '(?P<path>[^']*(?:\.cache|\.triton|torch_extensions|huggingface|"
              r"\.config|numba|outlines|\.locks|hf_home|transformers|/hub)[^']*)'",
              "the cache directory is not writable for the container's user (typically HOME=/ → /.cache)"),
    # --- credentials rejected ------------------------------------------------------------------------------
    # huggingface_hub (city96/ComfyUI_ExtraModels#99, ariG23498/gemma3-object-detection#5)
    Signature("hf-gated-401", "auth-failure", r"(?P<kind>GatedRepoError): 401 Client Error|You must (?:have access to it and )?"
              r"be authenticated to access it", "the hub refused an anonymous or invalid token for a gated repo"),
    Signature("hf-gated-403", "auth-failure", r"(?P<kind>not in the authorized list)|GatedRepoError: 403 Client Error",
              "the token is valid but its account was not granted access to the gated repo"),
    Signature("hf-gated", "auth-failure", r"Cannot access gated repo for url (?P<url>\S+?)\.?\s*$|You are trying to access a gated repo",
              "a gated hub repo"),
    Signature("hf-invalid-token", "auth-failure",
              r"(?P<kind>Invalid credentials in Authorization header|Invalid user token|token seems invalid)",
              "the hub rejected the token"),
    Signature("http-401-403", "auth-failure",
              r"(?P<kind>40[13]) Client Error:? (?:Unauthorized|Forbidden)?(?: for url: (?P<url>\S+))?",
              "an HTTP 401/403 from the server the program downloads from"),
    Signature("urllib-401-403", "auth-failure", r"HTTP Error (?P<kind>40[13]): (?:Unauthorized|Forbidden)", "an HTTP 401/403"),
    # botocore: `An error occurred (403) when calling the HeadObject operation: Forbidden`,
    # `An error occurred (AccessDenied) when calling the ListObjects operation: Access Denied` (kserve/kserve#2377)
    Signature("s3-denied", "auth-failure",
              r"An error occurred \((?P<kind>40[13]|AccessDenied|InvalidAccessKeyId|SignatureDoesNotMatch|ExpiredToken|"
              r"InvalidToken|Forbidden|AllAccessDisabled|AccountProblem)\) when calling the (?P<op>\w+) operation",
              "the object store rejected the credentials"),
    Signature("s3-no-credentials", "auth-failure", r"(?P<kind>NoCredentialsError|Unable to locate credentials)",
              "no object-store credentials at all"),
    Signature("gcs-denied", "auth-failure", r"(?P<kind>does not have storage\.\w+\.\w+ access)", "GCS denied the service account"),
    Signature("azure-denied", "auth-failure", r"(?P<kind>AuthorizationPermissionMismatch|AuthenticationFailed|AuthorizationFailure)",
              "Azure storage denied the identity"),
    Signature("k8s-rbac", "auth-failure",
              r"is forbidden: User \"(?P<kind>system:serviceaccount:[^\"]+)\" cannot (?P<op>\w+) resource",
              "the service account lacks RBAC permission"),
    Signature("openai-401", "auth-failure", r"(?P<kind>AuthenticationError: Error code: 401|Incorrect API key provided|invalid_api_key)",
              "an OpenAI-compatible API rejected the key"),
    Signature("generic-denied", "auth-failure",
              r"(?P<kind>401 Unauthorized|403 Forbidden|Invalid (?:API )?[Tt]oken|Access [Dd]enied|invalid_token)",
              "credentials were rejected"),
    # --- another service is not reachable at start ----------------------------------------------------------
    # redis-py `Error 111 connecting to redis:6379. Connection refused.`; Go `dial tcp: lookup redis on
    # 10.96.0.10:53: no such host`; libpq; urllib3; Node; curl; Java.
    Signature("redis-connect", "dependency-unreachable",
              r"Error -?\d+ connecting to (?P<host>[\w.-]+):(?P<port>\d+)\. (?P<why>[^.]+)", "redis-py could not connect"),
    Signature("libpq-dns", "dependency-unreachable", r"could not translate host name \"(?P<host>[^\"]+)\" to address(?:: (?P<why>.+))?",
              "PostgreSQL client: the host name does not resolve"),
    Signature("libpq-refused", "dependency-unreachable",
              r"connection to server at \"(?P<host>[^\"]+)\"[^,]*, port (?P<port>\d+) failed: (?P<why>Connection refused|timeout expired|Connection timed out)",
              "PostgreSQL client: connection failed"),
    Signature("urllib3-pool", "dependency-unreachable",
              r"HTTPS?ConnectionPool\(host='(?P<host>[^']+)', port=(?P<port>\d+)\).*?(?P<why>Connection refused|Name or service not known|"
              r"Temporary failure in name resolution|No address associated with hostname|nodename nor servname|timed out|getaddrinfo failed)",
              "an HTTP client could not connect"),
    Signature("go-dial-refused", "dependency-unreachable",
              r"dial tcp (?P<host>[\w.-]+|\[[0-9a-f:]+\]):(?P<port>\d+): connect: (?P<why>connection refused|connection timed out|no route to host)",
              "a Go client could not connect"),
    Signature("go-dns", "dependency-unreachable",
              r"dial tcp: lookup (?P<host>[\w.-]+)(?: on [\d.:\[\]a-f]+)?: (?P<why>no such host|i/o timeout|server misbehaving)",
              "a Go client could not resolve the host"),
    Signature("node-refused", "dependency-unreachable", r"connect (?P<why>ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH) (?P<host>[\w.:-]+?):(?P<port>\d+)",
              "a Node.js client could not connect"),
    Signature("node-dns", "dependency-unreachable", r"getaddrinfo (?P<why>ENOTFOUND|EAI_AGAIN) (?P<host>[\w.-]+)",
              "a Node.js client could not resolve the host"),
    Signature("curl", "dependency-unreachable",
              r"curl: \(\d+\) (?:Failed to connect to (?P<host>[\w.-]+) port (?P<port>\d+)[^:]*: (?P<why>.+)|(?P<why2>Could not resolve host): (?P<host2>[\w.-]+))",
              "curl could not connect"),
    Signature("java-connect", "dependency-unreachable",
              r"java\.net\.(?:(?P<why>UnknownHostException): (?P<host>[\w.-]+)|ConnectException: Connection refused)",
              "a Java client could not connect"),
    Signature("mongo-pymongo", "dependency-unreachable",
              r"ServerSelectionTimeoutError: (?P<host>[\w.-]+):(?P<port>\d+): (?P<why>[^,(]+)", "pymongo could not reach the server"),
    Signature("grpc-remote", "dependency-unreachable",
              r"ipv[46]:(?P<host>[\d.]+|\[[0-9a-f:]+\]):(?P<port>\d+): Failed to connect to remote host: (?P<why>Connection refused|[^;\n\"]+)",
              "a gRPC client could not connect"),
    Signature("aiohttp-connect", "dependency-unreachable",
              r"Cannot connect to host (?P<host>[\w.-]+):(?P<port>\d+) ssl:\S+ \[(?P<why>[^\]]+)\]", "an aiohttp client could not connect"),
    Signature("mysql-connect", "dependency-unreachable",
              r"(?:Can't connect to MySQL server on|Unknown MySQL server host) '(?P<host>[^']+)'(?: \((?P<why>[^)]+)\))?",
              "a MySQL client could not connect"),
    Signature("milvus-connect", "dependency-unreachable",
              r"Fail connecting to server on (?P<host>[\w.-]+):(?P<port>\d+)", "a Milvus client could not connect"),
    Signature("kafka-brokers", "dependency-unreachable", r"(?P<why>NoBrokersAvailable)", "no Kafka broker reachable"),
    Signature("grpc-unavailable", "dependency-unreachable",
              r"(?P<why>failed to connect to all addresses|DNS resolution failed)(?: for (?P<host>[\w.-]+)(?::(?P<port>\d+))?)?",
              "a gRPC client could not connect"),
    Signature("socket-generic", "dependency-unreachable",
              r"(?P<why>\[Errno 111\] Connection refused|\[Errno -2\] Name or service not known|\[Errno -3\] Temporary failure "
              r"in name resolution|\[Errno -5\] No address associated with hostname|getaddrinfo failed|ConnectionRefusedError)",
              "a socket connection failed"),
    # --- Python exceptions behind log prefixes (app-error quotes them when nothing specific explains the crash)
    Signature("python-exception-prefixed", "app-error",
              r"^(?:\(\w+ pid=\d+\) |\[rank\d+\]: |(?:ERROR|CRITICAL) [\d-]+ [\d:]+ (?:\[)?[\w.]+:\d+\]? )"
              r"(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)(?::\s.*)?$",
              "an uncaught Python exception behind a logger/process prefix"),
)
