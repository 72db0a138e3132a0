"""Calls run on a few threads at once, answers in order: what the readers used concurrent.futures for, whose import
(logging, traceback and more) cost every diagnosis ~5 ms of start-up."""
from __future__ import annotations

import threading
from typing import Callable, List, Sequence


class Parallel:
    """fn(item) for every item on up to `workers` threads, all started at once; results() waits for them and
    re-raises the first exception (a bug, not an answer: the readers turn failed reads into gaps themselves)."""

    def __init__(self, fn: Callable, items: Sequence, workers: int):
        self.items = list(items)
        self.answers: list = [None] * len(self.items)
        self.errors: List[BaseException] = []
        self._next = iter(range(len(self.items)))
        self._lock = threading.Lock()
        self._fn = fn
        # Daemon threads: an interrupted diagnosis exits at once instead of waiting out its requests' timeouts.
        self._threads = [threading.Thread(target=self._work, name="gpudoctor-read", daemon=True)
                         for _ in range(min(max(workers, 1), len(self.items)))]
        for t in self._threads:
            t.start()

    def _work(self) -> None:
        while not self.errors:
            with self._lock:
                i = next(self._next, None)
            if i is None:
                return
            try:
                self.answers[i] = self._fn(self.items[i])
            except BaseException as exc:   # noqa: BLE001 — handed to the caller by results()
                self.errors.append(exc)
                return

    def results(self) -> list:
        for t in self._threads:
            t.join()
        if self.errors:
            raise self.errors[0]
        return self.answers


def run_all(fn: Callable, items: Sequence, workers: int) -> list:
    """[fn(item) for item in items], computed on up to `workers` threads."""
    return Parallel(fn, items, workers).results()
