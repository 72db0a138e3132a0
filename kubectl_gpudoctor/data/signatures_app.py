"""Log signatures of application failures inside the container (a command that cannot start, model files
missing, caches not writable); data only, in the wording real runtimes and libraries print (sources next to each
pattern), and credentials or unreachable services belong in signatures_remote.py.

Patterns are matched line by line (no anchors across lines), case-insensitively and with runs of spaces squeezed
(logs/scan.py); a pattern that starts with an unbounded run of non-space characters says where the run may start
(a lookbehind for a space before it), or a long line without spaces makes it quadratic. Named groups carry what a
rule reports: `path`, `cmd`, `file`. Lines often carry prefixes such as
`(APIServer pid=33) `, `ERROR 02-20 10:13:40 engine.py:389] ` or `[rank0]: `, so most patterns are unanchored.
"""
from .signature import Signature

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
              r"(?<!\S)(?P<path>\S+) does not appear to have a file named (?P<file>[\w.\-]+)", "the model directory lacks a file"),
    Signature("hf-cant-load", "missing-model-files",
              r"Can't load (?:the )?(?:configuration|config|tokenizer|model|weights)(?: of| for) '(?P<path>[^']+)'",
              "transformers cannot load the model/config from that path"),
    Signature("hf-no-weights-in-dir", "missing-model-files",
              r"no file named .+ found in directory (?P<path>\S+?)\.?\s*$", "no weights file in the directory"),
    Signature("hf-not-a-directory", "missing-model-files",
              r"(?<!\S)(?P<path>\S+) is not the path to a directory containing a file named (?P<file>[\w.\-]+)",
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
    Signature("erofs-go", "model-cache-read-only", r"(?<![^\s'\"=])(?P<path>/\S+): read-only file system", "writing to a read-only file system"),
    Signature("erofs-rust", "model-cache-read-only", r"Read-only file system \(os error 30\)|kind: ReadOnlyFilesystem",
              "writing to a read-only file system"),
    Signature("eacces-cache", "model-cache-read-only",
              r"\[Errno 13\] Permission denied: '(?P<path>[^']*(?:\.cache|\.triton|torch_extensions|huggingface|"
              r"\.config|numba|outlines|\.locks|hf_home|transformers|/hub)[^']*)'",
              "the cache directory is not writable for the container's user (typically HOME=/ → /.cache)"),
)
