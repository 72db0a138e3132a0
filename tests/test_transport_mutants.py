"""Transport decisions pinned where mutation testing found them loose (issue 23), in-process: how long a
Retry-After client-go honours, and a gzip answer whose matches reach back the whole 32 KiB window."""
import gzip
import random

from kubectl_gpudoctor.collect import transport


def test_retry_after_of_up_to_five_digits_is_honoured_and_six_are_not():
    assert transport._retry_after(429, {"retry-after": "99999"}) == 99999
    assert transport._retry_after(503, {"retry-after": " 1 "}) == 1
    assert transport._retry_after(429, {"retry-after": "100000"}) is None
    assert transport._retry_after(429, {"retry-after": "Wed, 04 Dec 2026 19:00:00 GMT"}) is None
    assert transport._retry_after(404, {"retry-after": "1"}) is None and transport._retry_after(500, {}) is None


def test_a_gzip_answer_using_the_whole_window_decodes():
    """kube-apiserver compresses with Go's gzip writer (a 32 KiB window): a list repeating an object 20 KiB back
    must decode whole."""
    rng = random.Random(23)
    pod = bytes(rng.randrange(256) for _ in range(20000))
    body = pod + b'},{"kind":"Pod"' + pod
    assert transport._decoded({"content-encoding": "gzip"}, gzip.compress(body), 1 << 20) == body


def test_a_content_coding_not_asked_for_is_refused_by_name():
    import pytest
    from kubectl_gpudoctor.collect import http11
    with pytest.raises(http11.BadResponse, match="content coding 'zstd'"):
        transport._decoded({"content-encoding": "zstd"}, b"(\xb5/\xfd", 1 << 20)


def test_a_gzip_answer_just_under_the_limit_decodes_and_one_byte_over_does_not():
    import pytest
    from kubectl_gpudoctor.collect import http11
    body = b'{"kind":"PodList","items":[' + b'{"kind":"Pod"},' * 600 + b'{}]}'
    assert transport._decoded({"content-encoding": "gzip"}, gzip.compress(body), len(body)) == body
    with pytest.raises(http11.TooLarge):
        transport._decoded({"content-encoding": "gzip"}, gzip.compress(body), len(body) - 1)
