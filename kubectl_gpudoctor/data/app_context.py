"""The container's context as data: the runtime's wording for a missing command, where libraries keep their
caches (and the variable that moves each), which variables carry credentials, and image architecture hints."""

# The runtime's own wording when the container's command does not exist (StartError, RunContainerError,
# CreateContainerError, ContainerCannotRun): runc `exec: "torchrun": executable file not found in $PATH` or
# `exec: "./start.sh": stat ./start.sh: no such file or directory` (opencontainers/runc#4713, jboss-dockerfiles/jbpm#64),
# crun "executable file `torchrun` not found in $PATH". An empty command (`command: [""]`, a Helm value rendered empty)
# is quoted empty: `exec: "": executable file not found in $PATH` (runc, Go's os/exec LookPath("")).
RUNTIME_NOT_FOUND = (r"exec: \"(?P<cmd>[^\"]*)\": (?:executable file not found in \$PATH|stat [^:]*: no such file or directory"
                     r"|no such file or directory)|executable file `(?P<cmd2>[^`]*)` not found in \$PATH")

# The dynamic loader's wording when a library the program needs is missing; it exits 127 like a shell that found
# no command, but the command exists: glibc ld.so "<prog>: error while loading shared libraries: libcuda.so.1: cannot
# open shared object file: No such file or directory" (volcano-sh/volcano#4513, koordinator-sh/koordinator#2781),
# musl "Error loading shared library libstdc++.so.6: No such file or directory (needed by ./prog)" (wez/atomicparsley#19).
LOADER_ERROR = (r"error while loading shared libraries: (?P<lib>[^:\s]+)|Error loading shared library (?P<lib2>[^:\s]+): "
                r"(?:No such file|Exec format)")

# Where libraries keep their caches, and the variable that moves each one: matched against the path first, then
# against the traceback (which names the library); a generic ~/.cache path falls back to HOME, which moves them all.
CACHE_ENV = (
    (r"huggingface|/hub\b|\.locks|hf_home|transformers", "HF_HOME", "huggingface"),
    (r"\.triton|triton/runtime", "TRITON_CACHE_DIR", "triton"),
    (r"torch_extensions|cpp_extension", "TORCH_EXTENSIONS_DIR", "torch_extensions"),
    (r"/vllm\b|\.config/vllm|vllm/(?:envs|usage)", "VLLM_CACHE_ROOT", "vllm"),
    (r"numba", "NUMBA_CACHE_DIR", "numba"),
    (r"outlines", "OUTLINES_CACHE_DIR", "outlines"),
)
CACHE_ENV_FALLBACK = ("HOME", "")

# Environment variables that carry credentials; only their names and sources are ever reported.
CREDENTIAL_ENV = {
    "hub": ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN", "HUGGINGFACEHUB_API_TOKEN", "HF_API_TOKEN",
            "HUGGING_FACE_TOKEN"),   # the last: data-on-eks Triton+vLLM blueprint (awslabs/data-on-eks#605)
    "s3": ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
           "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE"),
    "gcs": ("GOOGLE_APPLICATION_CREDENTIALS",),
    "azure": ("AZURE_STORAGE_KEY", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_ID"),
    "ngc": ("NGC_API_KEY",),
}

# Image name/tag fragments that say which CPU architecture an image was built for.
ARCH_HINT = r"(?i)(?:^|[-_/:.])(?P<arch>arm64|aarch64|amd64|x86[-_]64|armv7|armhf|ppc64le|s390x)(?:$|[-_./@:])"
ARCH_ALIASES = {"aarch64": "arm64", "x86_64": "amd64", "x86-64": "amd64", "armv7": "arm", "armhf": "arm"}
