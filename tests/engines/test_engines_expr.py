"""The safe expression evaluator used by recipe values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infx.engines.expr import Expr, ExprError, evaluate

CEILING = "max(2 * conc, 128) * (1 + spec_tokens)"


@pytest.mark.parametrize(("conc", "want"), [(1, 1024), (8, 1024), (32, 1024), (64, 1024), (128, 2048)])
def test_capture_ceiling(conc: int, want: int) -> None:
    assert evaluate(CEILING, {"conc": conc, "spec_tokens": 7}) == want


@given(conc=st.integers(1, 10_000), spec=st.integers(0, 16))
def test_ceiling_matches_python(conc: int, spec: int) -> None:
    assert evaluate(CEILING, {"conc": conc, "spec_tokens": spec}) == max(2 * conc, 128) * (1 + spec)


@pytest.mark.parametrize(
    ("src", "env", "want"),
    [
        ("tp == 2 and not dp_attn", {"tp": 2, "dp_attn": False}, True),
        ("1 if tp >= 4 else 0", {"tp": 8}, 1),
        ("ceil(total / 3)", {"total": 10}, 4),
        ("int(7 / 2) + 10 // 3 + 10 % 3 + 2 ** 3", {}, 3 + 3 + 1 + 8),
        ("min(tp, 4) * -1", {"tp": 8}, -4),
        ("kv_offloading == 'dram' or 5", {"kv_offloading": "none"}, 5),
        ("1 < tp <= 4", {"tp": 4}, True),
    ],
)
def test_allowed(src: str, env: dict, want: object) -> None:
    assert evaluate(src, env) == want


@pytest.mark.parametrize(
    ("src", "needle"),
    [
        ("__import__('os').system('true')", "not allowed"),
        ("conc.bit_length()", "not allowed"),
        ("conc.real", "attribute access"),
        ("[1, 2][0]", "subscripts"),
        ("open('/etc/passwd')", "call to 'open'"),
        ("lambda: 1", "Lambda"),
        ("(x := 1)", "NamedExpr"),
        ("max", "can only be called"),
        ("f'{conc}'", "JoinedStr"),
        ("2 ** 1000", "too large"),
        ("1 +", "invalid expression"),
        ("max(*[1])", "not allowed"),
        ("conc in (1, 2)", "comparisons"),
    ],
)
def test_forbidden(src: str, needle: str) -> None:
    with pytest.raises(ExprError, match=None) as exc:
        evaluate(src, {"conc": 1})
    assert needle in str(exc.value)


def test_unknown_name_is_named() -> None:
    with pytest.raises(ExprError) as exc:
        evaluate("max(2 * concurrency, 128)", {"conc": 1})
    assert "unknown name 'concurrency'" in str(exc.value)


def test_names_are_collected() -> None:
    assert Expr(CEILING).names == {"conc", "spec_tokens"}
