"""The showcase's arithmetic: bytes behind the floor, paired differences, the table."""
import statistics
import sys

import pytest

from planner import known_configs
from planner import plan as plan_lib
from planner import target as target_lib
from tools import showcase

def test_stream_bytes_match_the_recorded_floors():
    # docs/PERFORMANCE.md: 2,471,628,928 bytes (1B) and 269,030,144 (SmolLM2), each with a
    # 128-byte RoPE table, which is not a weight.
    assert showcase.stream_bytes(known_configs.llama_3_2_1b()) == (2_471_628_928 - 128, 32_768)
    assert showcase.stream_bytes(known_configs.smollm2_135m()) == (269_030_144 - 128, 23_040)


def test_stream_bytes_equal_the_plans_count_tied_and_untied():
    target = target_lib.resolve_target("h200")
    for config in (known_configs.tiny(), known_configs.tiny(tied=False)):
        plan = plan_lib.make_plan(config, target, max_context=64)
        weights, kv = showcase.stream_bytes(config)
        rope_table = config.head_dim // 2 * 4
        assert weights + rope_table == plan_lib.streamed_bytes_per_token(plan)
        assert kv == plan_lib.kv_bytes_per_position(config)


def test_paired_difference_and_interval():
    mean, half = showcase.paired([1.0, 1.1, 0.9], [2.0, 2.3, 1.9])
    assert mean == pytest.approx(1.0667, abs=1e-4)
    # differences 1.0, 1.2, 1.0: sd 0.11547, t(2) = 4.303
    assert half == pytest.approx(4.303 * 0.11547 / 3 ** 0.5, rel=1e-3)
    diffs = [0.1 * i for i in range(12)]  # 11 degrees of freedom: t = 2.201, not 1.96
    _, half = showcase.paired([0.0] * 12, diffs)
    assert half == pytest.approx(2.201 * statistics.stdev(diffs) / 12 ** 0.5)
    mean, half = showcase.paired([1.0], [3.0])
    assert mean == 2.0 and half != half  # NaN: one block gives no interval


def test_table_lists_every_runtime_and_context():
    row = {"floor_ms": 0.5, "window": [1, 16], "tileinfer": {"median_ms": 1.0, "floor_ratio": 0.5},
           "peer": {"median_ms": 2.0, "floor_ratio": 0.25, "vs_tileinfer_ms": 1.0, "ci95_ms": 0.1}}
    results = {"runtimes": ["tileinfer", "peer"], "contexts": [1], "latency": {"1": row},
               "generation": {"tileinfer": {"tokens_per_s": 900.0, "ms_per_token": 1.11, "same_as_tileinfer": True},
                              "peer": {"tokens_per_s": 450.0, "ms_per_token": 2.22, "same_as_tileinfer": False}},
               "kernels": {"peer": 787}}
    text = showcase.table(results)
    assert "| 1 | 1-16 | 0.500 | 1.000 (50%) | 2.000 (25%), +1.000 ± 0.100 |" in text
    assert "| peer | 450.0 | 2.220 | False | 787 |" in text


def test_table_marks_phases_a_run_did_not_reach():
    row = {"floor_ms": 0.5, "window": [1, 16], "tileinfer": {"median_ms": 1.0, "floor_ratio": 0.5}}
    results = {"runtimes": ["tileinfer"], "contexts": [1], "latency": {"1": row}, "generation": {},
               "kernels": {}}
    assert "| tileinfer | not measured | - | - | not measured |" in showcase.table(results)


@pytest.fixture
def parsed_flags():
    """Parses the given showcase command line into showcase.FLAGS; unparses afterwards."""
    def parse(*args):
        showcase.FLAGS.unparse_flags()
        showcase.FLAGS(["showcase.py", *args])
    yield parse
    showcase.FLAGS.unparse_flags()


def test_bench_flags_reach_tileinfers_command_line_and_the_conditions(parsed_flags):
    parsed_flags("--bench=/x/bench", "--package=/x/m.tpkg", "--device=cuda",
                 "--bench_flags=--attention_tile_min=96,--check_target=false")
    argv = showcase.tileinfer_argv()
    assert argv[0] == "/x/bench" and "--package=/x/m.tpkg" in argv and "--device=gpu" in argv
    assert argv[-2:] == ["--attention_tile_min=96", "--check_target=false"]
    assert showcase.conditions()["bench_flags"] == ["--attention_tile_min=96", "--check_target=false"]
    parsed_flags("--bench=/x/bench", "--package=/x/m.tpkg")
    assert showcase.tileinfer_argv()[-1].startswith("--device=")  # none given: nothing appended


@pytest.mark.parametrize("bad", ["attention_tile_min=96", "--attention_tile_min", "-x=1"])
def test_a_bench_flag_not_of_the_form_name_value_is_refused(parsed_flags, bad):
    parsed_flags("--bench=/x/bench", "--package=/x/m.tpkg", f"--bench_flags={bad}")
    with pytest.raises(showcase.app.UsageError, match="--name=value"):
        showcase.tileinfer_argv()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
