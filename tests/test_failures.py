"""The runtime failure classes share one base: whatever records a failure reads ``kind``, ``message`` and
``log_tail`` the same way, whichever stage raised it."""

from __future__ import annotations

import pytest

from infx.engines.disagg.process import RoleFailure
from infx.engines.logparse import FailureKind
from infx.engines.server import EngineFailure
from infx.evals.runner import EvalFailed
from infx.failures import Failure
from infx.sweep.interfaces import LaunchFailed


@pytest.mark.parametrize(("failure", "kind", "text"), [
    (EngineFailure(FailureKind.OOM_LOADING, "CUDA out of memory", log_tail="...OOM\n", returncode=1),
     FailureKind.OOM_LOADING, "engine failed (oom-loading): CUDA out of memory [exit code 1]"),
    (RoleFailure("decode", "exited", "pid 7 exited with code 1", "boom\n"), "exited",
     "role decode exited: pid 7 exited with code 1"),
    (LaunchFailed("startup-timeout", "not ready after 5s", "loading\n"), "startup-timeout",
     "startup-timeout: not ready after 5s"),
    (EvalFailed("server", "HTTP 500 x3", "trace\n"), "server", "server: HTTP 500 x3"),
])
def test_every_runtime_failure_is_a_failure(failure: Failure, kind: str, text: str) -> None:
    assert isinstance(failure, Failure)
    assert failure.kind == kind and failure.message and failure.log_tail
    assert str(failure).startswith(text)
    with pytest.raises(Failure):
        raise failure


def test_a_failure_without_a_message_is_its_kind() -> None:
    assert str(LaunchFailed("fingerprint-drift")) == "fingerprint-drift"
    assert LaunchFailed("x", port_retries=[1]).port_retries == [1]
