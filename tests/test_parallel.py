"""collect/parallel.py: every call made once, answers in the items' order, never more threads than asked for, and a
bug in a call raised to the caller instead of lost."""
import threading
import time

import pytest

from kubectl_gpudoctor.collect.parallel import Parallel, run_all


def test_answers_come_back_in_the_order_of_the_items_whatever_finishes_first():
    assert run_all(lambda n: (time.sleep(0.001 * (5 - n)), n * n)[1], range(5), 5) == [0, 1, 4, 9, 16]


def test_no_more_threads_at_once_than_asked_and_each_item_once():
    lock, running, peak, seen = threading.Lock(), [0], [0], []

    def call(item):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            seen.append(item)
        time.sleep(0.005)
        with lock:
            running[0] -= 1
        return item

    assert run_all(call, list(range(20)), 4) == list(range(20))
    assert peak[0] <= 4 and sorted(seen) == list(range(20))


def test_no_items_no_threads(monkeypatch):
    # Counted at the source: threading.active_count() also sees other tests' server threads come and go.
    started = []
    real_start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: (started.append(self.name), real_start(self))[1])
    assert run_all(lambda x: x, [], 8) == []
    assert run_all(lambda x: x, [1, 2], 8) == [1, 2]
    assert started == ["gpudoctor-read", "gpudoctor-read"]   # none for no items, one per item up to the bound


def test_a_failing_call_is_raised_by_results():
    def call(item):
        if item == 3:
            raise KeyError("bug")
        return item

    with pytest.raises(KeyError, match="bug"):
        run_all(call, range(6), 2)


def test_calls_run_while_the_caller_does_other_work():
    started = threading.Event()
    work = Parallel(lambda _: started.set() or "answer", ["x"], 1)
    assert started.wait(5), "the call did not start before results() was asked for"
    assert work.results() == ["answer"]
