"""The SSE event splitter joins an event's reads once (issue 26: it was quadratic in the event's size);
however the body is cut into reads, it yields exactly the events of the whole body."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from infx.loadgen.sse import _events


def _reference(body: bytes) -> list[bytes]:
    body = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    *blocks, rest = body.split(b"\n\n")
    return [b for b in blocks if b] + ([rest] if rest.strip() else [])


@settings(max_examples=300)
@given(st.lists(st.sampled_from([b"data: ", b"{}", b"x", b"\n", b"\n\n", b":c", b" "]), max_size=40).map(b"".join),
       st.lists(st.integers(0, 60), max_size=12))
def test_any_cut_into_reads_yields_the_events_of_the_whole_body(body: bytes, cuts: list[int]) -> None:
    points = sorted({min(c, len(body)) for c in cuts} | {0, len(body)})
    reads = [(i, body[a:b]) for i, (a, b) in enumerate(zip(points, points[1:], strict=False))]
    assert [block for _, block in _events(reads)] == _reference(body)


def test_an_event_spread_over_many_reads_is_one_event_stamped_at_its_end() -> None:
    event = b'data: {"x": "' + b"y" * 100_000 + b'"}\n\n'
    reads = [(i, event[j:j + 1000]) for i, j in enumerate(range(0, len(event), 1000))]
    ((t, block),) = list(_events(reads))
    assert t == len(reads) - 1 and block == event[:-2]
