"""What each fault of the synthetic test server (``infx.loadgen.testserver.FAULTS``) must end as."""

from __future__ import annotations

#: fault -> the ``error_class`` of its request record (``ok`` is the one that does not fail).
FAULT_CLASSES = {
    "http_500": "http_5xx",
    "http_429": "http_429",
    "reset": "connection_reset",
    "malformed": "malformed_sse",
    "stall": "timeout_stall",
    "trickle": "timeout_total",
    "no_finish": "incomplete_stream",
    "error_event": "stream_error",
    "empty": "empty_output",
    "double_finish": "protocol_error",
}
