"""Loads the rules and renderers in a background thread while a live diagnosis waits on its first requests."""
from __future__ import annotations

import sys
import threading
from typing import Optional

# What a diagnosis needs once its evidence is in (the ~100 rule modules above all), imported by name; then the
# one-time work every diagnosis with a log or a GPU node does (the log signatures' literal prefilters, the GPU
# stack's patterns), as (module, function).
MODULES = ("kubectl_gpudoctor.verdict", "kubectl_gpudoctor.render")
PREPARE = (("kubectl_gpudoctor.logs.scan", "compiled"), ("kubectl_gpudoctor.gpu.stack", "compiled"))
# While both threads want the interpreter, hand it over every millisecond instead of every five, so a response
# that has arrived is read without waiting for the importing thread's turn to end.
SWITCH_INTERVAL = 0.001


class Preload:
    """start() once the first request is sent (the process has nothing else to do until it is answered); wait()
    before the verdict. Import errors are left to the ordinary import that follows, where they surface as usual."""

    def __init__(self, modules=MODULES, prepare=PREPARE):
        self.modules, self.prepare = modules, prepare
        self.thread: Optional[threading.Thread] = None
        self.interval = sys.getswitchinterval()

    def start(self) -> None:
        if self.thread is None:
            sys.setswitchinterval(SWITCH_INTERVAL)
            self.thread = threading.Thread(target=self._load, name="gpudoctor-preload", daemon=True)
            self.thread.start()

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()
            sys.setswitchinterval(self.interval)

    def _load(self) -> None:
        import importlib
        try:
            for name in self.modules:
                importlib.import_module(name)
            for name, function in self.prepare:
                getattr(importlib.import_module(name), function)()
        except BaseException:   # noqa: BLE001 — the main thread's own import or call reports it
            return
