"""Each engine adapter reads back what it renders: ``adapter.settings(argv, env, files)`` of a launch gives the
flags, options and context it was rendered with, and rendering those flags again gives the same argv."""

from __future__ import annotations

import pytest
import yaml

from infx.engines.adapter import ABSENT, Topology
from infx.engines.render import ADAPTERS
from tests.sweep.fakes import make_point


def _rendered(engine: str, **row: object) -> tuple[list[str], dict[str, str], dict[str, object]]:
    adapter = ADAPTERS[engine]
    point = make_point("m", 4, 8, **{"max-model-len": 9472, **row})
    owned = adapter.topology(Topology.from_point(point, 0))
    flags = {**adapter.serve_flags("/models/m", "m", "0.0.0.0", "8123"),
             **{k: v for k, v in owned.flags.items() if v is not ABSENT}}
    files = ({adapter.options_file: yaml.safe_dump({"enable_attention_dp": True, "max_batch_size": 64})}
             if adapter.options_file else {})
    return adapter.argv(adapter.default_entrypoint, "/models/m", flags), files, flags


@pytest.mark.parametrize("engine,context_flag", [("vllm", "--max-model-len"), ("sglang", "--context-length"),
                                                  ("trt", "--max_seq_len")])
def test_settings_read_back_what_the_adapter_rendered(engine: str, context_flag: str) -> None:
    adapter = ADAPTERS[engine]
    argv, files, flags = _rendered(engine)
    assert context_flag in argv  # the adapter's own spelling of the context
    s = adapter.settings(argv, {"K": "v"}, files)
    assert s.engine == engine and s.max_model_len == 9472 and s.tp == 4 and s.env == {"K": "v"}
    assert adapter.argv(adapter.default_entrypoint, "/models/m", s.flags) == argv  # the round trip
    assert set(flags) <= set(s.flags)
    if adapter.options_file:
        assert s.options == {"enable_attention_dp": True, "max_batch_size": 64}
    else:
        assert s.options == {}


def test_settings_take_the_equals_spelling_and_json_values() -> None:
    vllm = ADAPTERS["vllm"]
    s = vllm.settings(["vllm", "serve", "m", "--max_model_len=4096", "--speculative-config",
                       '{"method":"mtp","num_speculative_tokens":1}', "--enforce-eager"], {}, {})
    assert s.max_model_len == 4096
    assert s.flags["speculative-config"] == {"method": "mtp", "num_speculative_tokens": 1}
    assert s.flags["enforce-eager"] is True and s.tp is None
