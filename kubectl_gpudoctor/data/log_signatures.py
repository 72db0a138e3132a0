"""Log signatures as data: regex -> meaning -> the rule it supports, in real-world wording."""
from __future__ import annotations

from .app_context import LOADER_ERROR
from .signature import Signature
# Phase-specific signatures live in their own data modules; order matters only within a rule.
from .signatures_gpu import GPU
from .signatures_distributed import DISTRIBUTED
from .signatures_app import APP
from .signatures_remote import REMOTE
from .signatures_network import NETWORK
from .signatures_init import INIT


GENERIC = (
    # --- generic application errors (app-error quotes them when nothing specific explains the crash)
    # Not every exception class ends in Error/Exception: torch._dynamo.exc.BackendCompilerFailed, Triton's
    # triton.runtime.errors.OutOfResources, StopIteration, ExceptionGroup, ray.exceptions.RayTaskError(RuntimeError);
    # a dotted module path before a CamelCase class and ": message" is a traceback's last line whatever the suffix.
    Signature("python-exception", "app-error",
              r"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Iteration|Group)|Exception)"
              r"(?:\(\w+\))?(?::\s.*)?$|^(?:[a-z_]\w*\.)+[A-Z]\w+(?:\(\w+\))?: \S.*$",
              "an uncaught Python exception (the last line of a traceback)", exact_case=True),
    Signature("go-panic", "app-error", r"^panic: .+", "a Go panic", exact_case=True),
    Signature("java-exception", "app-error", r"^Exception in thread \".+\" .+", "an uncaught Java exception", exact_case=True),
    Signature("fatal-line", "app-error", r"^(?:FATAL|Fatal|F\d{4} |CRITICAL|\[FATAL\]).*", "a fatal log line", exact_case=True),
    Signature("error-line", "app-error", r"^(?:ERROR|Error:|\[ERROR\]|E\d{4} ).*", "an error log line", exact_case=True),
    Signature("shared-library-missing", "app-error", LOADER_ERROR,
              "the dynamic loader could not load a shared library the program needs (it exits 127)"),
    # --- exec failures reported by the runtime or the shell
    Signature("exec-not-found", "command-not-found",
              r"executable file not found in \$PATH|exec: \"[^\"]+\": stat [^:]+: no such file or directory"
              r"|^exec [^:]+: no such file or directory|^/bin/(?:ba)?sh: .*: (?:command )?not found|: not found$",
              "the command does not exist in the image"),
)

# Generic application errors behind a logger/process prefix; listed after the specific application signatures.
PREFIXED = (
    # --- Python exceptions behind log prefixes (app-error quotes them when nothing specific explains the crash)
    # The prefixes stack: vLLM V1 puts the process tag before the logger tag, e.g. "(Worker_TP0 pid=321) ERROR
    # 04-23 09:57:19 [multiproc_executor.py:671] RuntimeError: ..." (vllm-project/vllm#47415, #28910), older
    # "(VllmWorker rank=1 pid=12231) ERROR 03-25 21:13:53 multiproc_executor.py:374] ..." (vllm-project/vllm#15469).
    Signature("python-exception-prefixed", "app-error",
              r"^(?:\([^)]*pid=\d+[^)]*\) ?|\[rank\d+\]: ?|(?:ERROR|CRITICAL) [\d-]+ [\d:.]+ (?:\[)?[\w.]+:\d+\]? )+"
              r"(?:(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*(?:Error|Exception|Iteration|Group)|Exception)(?:\(\w+\))?"
              r"|(?:[a-z_]\w*\.)+[A-Z]\w+(?:\(\w+\))?)(?::\s.*)?$",
              "an uncaught Python exception behind a logger/process prefix", exact_case=True),
)


SIGNATURES = GENERIC + GPU + DISTRIBUTED + APP + REMOTE + PREFIXED + NETWORK + INIT
