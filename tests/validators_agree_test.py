"""Plans the two validators (py/planner/validate.py and host/validate.cc) must judge alike,
and the CPU executor's refusals that follow: cases from an adversarial review of package
format 2 (the FIXED64 residual), each once accepted by one validator or by the runtime.
"""
import copy
import sys

import pytest

from host import _tileinfer
from planner import checkpoint as checkpoint_lib
from planner import format_spec as spec
from planner import main as planner_main
from planner import package as package_lib
from planner import plan as plan_lib
from planner import target as target_lib
from planner import tokenizer_spec
from planner import validate
from tests.reference import tiny_models

OP = spec.OPCODES


def small_target(sm_count):
    return target_lib.Target(name="test GPU", compute_capability=(8, 6), sm_count=sm_count,
                             workers_per_sm=1, threads_per_worker=128, registers_per_thread=64,
                             shared_memory_per_worker=0, worker_fingerprint="unprobed")


@pytest.fixture
def tiny(tmp_path):
    """(checkpoint, target, plan) of a 2-layer 9:3 model on 6 workers."""
    d = tmp_path / "ckpt"
    tiny_models.write_tiny_checkpoint(d, hidden=72, ffn=100, layers=2, heads=9, kv_heads=3,
                                      vocab=97, tied=True, seed=1)
    ck, tg = checkpoint_lib.load_checkpoint(str(d)), small_target(6)
    plan = plan_lib.make_plan(ck.config, tg, max_context=40, attention_chunks=2,
                              attention_min_chunk=4)
    return ck, tg, plan


def write_unvalidated(tmp_path, ck, target, plan):
    tok = tokenizer_spec.TokenizerSpec.from_hf_dir(ck.tokenizer_dir, ck.config).to_json()
    path = str(tmp_path / "bad.tpkg")
    package_lib.write_package(path, plan, ck.weights, ck.config, target, tok, "test",
                              validate=False, progress=False)
    return path


def verdicts(path):
    """(Python accepts, C++ accepts) for the package at path."""
    try:
        validate.validate_plan(package_lib.read_package(path))
        py = True
    except validate.PlanError:
        py = False
    try:
        _tileinfer.validate_package(path)
        cc = True
    except RuntimeError:
        cc = False
    return py, cc


def ffn_tasks(plan, layer=0):
    return [i for i, t in enumerate(plan.tasks) if t["opcode"] == OP["FFN"] and t["layer"] == layer]


def test_the_unchanged_plan_passes_both(tmp_path, tiny):
    ck, tg, plan = tiny
    assert verdicts(write_unvalidated(tmp_path, ck, tg, plan)) == (True, True)


def _tensor_reserved(plan):
    plan.tensors[1]["reserved"] = 5


def _wave_sync(plan):
    plan.waves[3]["sync"] = 99


def _wave_layer(plan):
    plan.waves[3]["layer"] = 1  # layer 0's ATTN_OUT wave


def _task_reserved(plan):
    plan.tasks[ffn_tasks(plan)[0]]["reserved1"] = 1


def _lm_head_row_left_out(plan):
    last = max(i for i, t in enumerate(plan.tasks) if t["opcode"] == OP["LM_HEAD"])
    plan.tasks[last]["row_end"] -= 1


def _nth(plan, opcode, layer=0, nth=0):
    return [i for i, t in enumerate(plan.tasks)
            if t["opcode"] == OP[opcode] and t["layer"] == layer][nth]


def _set(opcode, fields, nth=0, layer=0):
    """A damage that sets `fields` (a dict) of the nth `opcode` task of `layer`."""
    def damage(plan):
        plan.tasks[_nth(plan, opcode, layer, nth)].update(fields)
    damage.__name__ = f"{opcode}_{'_'.join(fields)}"
    return damage


def _wo_as_qkv(plan):  # a weight of the wrong shape: Wo (72, 72) where QKV needs (120, 72)
    plan.tasks[_nth(plan, "RMSNORM_GEMV")]["weight"] = plan.tensor_id("layers.0.wo")


def _rope_as_weight(plan):  # an F32 table where a BF16 matrix belongs
    plan.tasks[_nth(plan, "ATTN_OUT")]["weight"] = plan.tensor_id("rope_inv_freq")


def _buffer_id_past_the_table(plan):
    plan.tasks[_nth(plan, "ATTN_OUT")]["out_buf"] = len(plan.buffers)


def _attn_out_row_left_out(plan):
    plan.tasks[_nth(plan, "ATTN_OUT", layer=1, nth=5)]["row_end"] -= 1


def _ffn_rows_twice(plan):
    plan.tasks[_nth(plan, "FFN", layer=1, nth=3)]["row_begin"] -= 1


def _one_more_wave(plan):
    plan.waves.append(dict(plan.waves[-1]))
    plan.params["waves"] += 1


def _one_more_task(plan):
    plan.tasks.append(dict(plan.tasks[-1]))
    plan.params["tasks"] += 1


def _lm_head_slot_twice(plan):
    lm = [i for i, t in enumerate(plan.tasks) if t["opcode"] == OP["LM_HEAD"]]
    plan.tasks[lm[1]]["slot"] = plan.tasks[lm[0]]["slot"]


@pytest.mark.parametrize("damage", [
    _tensor_reserved, _wave_sync, _wave_layer, _task_reserved, _lm_head_row_left_out,
    _wo_as_qkv, _rope_as_weight, _buffer_id_past_the_table, _attn_out_row_left_out,
    _ffn_rows_twice, _one_more_wave, _one_more_task, _lm_head_slot_twice,
    _set("ATTENTION", {"param0": 3}),          # K/V head 3 of 3
    _set("ATTENTION", {"slot": 2}),            # chunk 2 of 2
    _set("ATTENTION", {"param1": 3}),          # n_chunks against meta's 2
    _set("ATTENTION", {"param2": 5}),          # min_chunk against meta's 4
    _set("ATTN_OUT", {"param1": 3}),           # merges 3 chunks, meta 2
    _set("FFN", {"slot": 6}),                  # 6 FFN parts: 0..5
    _set("LM_HEAD", {"slot": 6}),     # 6 slots: 0..5
    _set("FFN", {"layer": 5}, layer=1),  # a layer the model lacks
], ids=lambda d: d.__name__)
def test_rules_a_mutation_audit_found_untested(tmp_path, tiny, damage):
    ck, tg, plan = tiny
    damage(plan)
    assert verdicts(write_unvalidated(tmp_path, ck, tg, plan)) == (False, False)


def test_ffn_slot_twice(tmp_path, tiny):
    ck, tg, plan = tiny
    f = ffn_tasks(plan)
    plan.tasks[f[1]]["slot"] = plan.tasks[f[0]]["slot"]
    assert verdicts(write_unvalidated(tmp_path, ck, tg, plan)) == (False, False)


def test_ffn_task_planned_twice(tmp_path, tiny):
    """Same rows, same slot, twice: its part would be added into x0 twice."""
    ck, tg, plan = tiny
    last = ffn_tasks(plan)[-1]
    wave = plan.tasks[last]["wave"]
    plan.tasks.insert(last + 1, copy.deepcopy(plan.tasks[last]))
    plan.waves[wave]["task_count"] += 1
    for w in plan.waves[wave + 1:]:
        w["first_task"] += 1
    plan.params["tasks"] += 1
    path = write_unvalidated(tmp_path, ck, tg, plan)
    assert verdicts(path) == (False, False)
    with pytest.raises(RuntimeError, match="rows .* are in two tasks"):
        _tileinfer.CpuSession(path, threads=2)


def test_attn_out_row_left_out(tmp_path, tiny):
    """A residual row ATTN_OUT never rewrites keeps adding up across layers."""
    ck, tg, plan = tiny
    ti = [i for i, t in enumerate(plan.tasks) if t["opcode"] == OP["ATTN_OUT"] and t["layer"] == 1][-1]
    plan.tasks[ti]["row_end"] -= 1
    assert verdicts(write_unvalidated(tmp_path, ck, tg, plan)) == (False, False)


def test_more_workers_than_the_target_has(tmp_path, tiny):
    ck, tg, plan = tiny
    plan.params["workers"] = 7
    assert verdicts(write_unvalidated(tmp_path, ck, tg, plan)) == (False, False)


def test_unused_field_of_another_format(tmp_path, tiny):
    """Format 1's FFN tasks named the residual in aux_buf: unused fields must be NONE_ID."""
    ck, tg, plan = tiny
    plan.tasks[ffn_tasks(plan)[0]]["aux_buf"] = 0  # x0
    assert verdicts(write_unvalidated(tmp_path, ck, tg, plan)) == (False, False)


def test_operand_buffer_larger_than_its_opcode_needs(tmp_path, tiny):
    ck, tg, plan = tiny
    plan.buffers[1]["elements"] += 8  # x1
    assert verdicts(write_unvalidated(tmp_path, ck, tg, plan)) == (False, False)


def test_leftover_buffer(tmp_path, tiny):
    ck, tg, plan = tiny
    plan.buffers.append(dict(name="ffn_part", kind=spec.BUFFER_KINDS["ACTIVATION"],
                             dtype=spec.DTYPES["F32"], elements=6 * 72))
    assert verdicts(write_unvalidated(tmp_path, ck, tg, plan)) == (False, False)


def test_sampled_cpu_generation_stops_on_an_out_of_range_residual(tmp_path):
    ckpt = tmp_path / "big"
    tiny_models.write_residual_overflow_checkpoint(ckpt)
    pkg = tmp_path / "big.tpkg"
    planner_main.build_package(str(ckpt), "h200", str(pkg), 16, progress=False)
    engine = _tileinfer.Engine(str(pkg), device="cpu")
    for temperature in (0.0, 1.0):
        with pytest.raises(RuntimeError, match="non-finite logit at position 2"):
            engine.generate(prompt_ids=[1, 2, 3], max_new_tokens=4, temperature=temperature, seed=1)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
