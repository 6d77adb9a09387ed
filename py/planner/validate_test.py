"""Tests for planner.validate: each rule broken by hand in an otherwise valid plan."""

import copy
import sys

import pytest

from planner import format_spec as spec
from planner import known_configs
from planner import plan as plan_lib
from planner import target as target_lib
from planner import validate
from planner.validate import AccessContext, PlanError, task_access

OP = spec.OPCODES
NONE = spec.NONE_ID


def small_target(workers: int, fingerprint: str = "unprobed") -> target_lib.Target:
    return target_lib.Target(name="test GPU", compute_capability=(8, 6), sm_count=workers,
                             workers_per_sm=1, threads_per_worker=128,
                             registers_per_thread=64, shared_memory_per_worker=0,
                             worker_fingerprint=fingerprint)


@pytest.fixture
def plan():
    """Tiny 9:3-head model on 6 workers, 2 layers, 40 positions, 2 chunks a K/V head of >= 4
    (set: the planner's default gives a max_context this short one chunk)."""
    return plan_lib.make_plan(known_configs.tiny(), small_target(6), max_context=40,
                              attention_chunks=2, attention_min_chunk=4)


def first(p, opcode, layer=0, nth=0):
    """Index of the nth task of `opcode` in `layer`."""
    idx = [i for i, t in enumerate(p.tasks) if t["opcode"] == OP[opcode] and t["layer"] == layer]
    return idx[nth]


def broken(p, match):
    """Asserts validate_plan refuses p with a message matching `match`; returns it."""
    with pytest.raises(PlanError, match=match) as e:
        validate.validate_plan(p)
    return str(e.value)


def names_task(msg, p, ti):
    t = p.tasks[ti]
    op = {v: k for k, v in OP.items()}.get(t["opcode"], f"opcode {t['opcode']}")
    return f"task {ti} ({op}, wave {t['wave']}, worker {t['worker']})" in msg


def test_valid_plans_pass(plan):
    validate.validate_plan(plan)
    validate.validate_plan(plan, target=small_target(6))
    # Untied, and more workers than rows (empty ranges skipped).
    validate.validate_plan(plan_lib.make_plan(
        known_configs.tiny(hidden=64, ffn=128, heads=4, kv_heads=2, vocab=50, tied=False),
        small_target(132), max_context=32))
    validate.validate_plan(plan, positions=range(40))  # every position of the cache


# --- the negative tests the brief names -----------------------------------------------------

def test_operand_of_the_wrong_size(plan):
    # The qkv buffer one element short (the QKV task owning the last row would write past it)
    # or one long: operands hold exactly what their opcode needs, as the C++ validator says.
    for delta in (-1, 1):
        p = copy.deepcopy(plan)
        p.buffers[p.buffer_id("qkv")]["elements"] += delta
        msg = broken(p, rf"out_buf is buffer 'qkv' of {120 + delta} elements; RMSNORM_GEMV needs 120")
        assert names_task(msg, p, first(p, "RMSNORM_GEMV")), msg


def test_a_buffer_no_task_names(plan):
    # A leftover buffer (e.g. format 1's ffn_part): the C++ validator refuses it too.
    plan.buffers.append(dict(name="ffn_part", kind=spec.BUFFER_KINDS["ACTIVATION"],
                             dtype=spec.DTYPES["F32"], elements=6 * 72))
    broken(plan, r"buffer 7 'ffn_part' is not an operand of any task")


def test_operand_rows_past_the_weight(plan):
    ti = first(plan, "FFN", nth=5)  # the last: rows [83, 100)
    plan.tasks[ti]["row_end"] = 101  # F = 100
    msg = broken(plan, r"rows \[\d+, 101\) must be a non-empty range inside \[0, 100\)")
    assert names_task(msg, plan, ti)


def test_operand_tensor_id_out_of_range(plan):
    ti = first(plan, "ATTN_OUT", layer=1)
    plan.tasks[ti]["weight"] = len(plan.tensors)
    msg = broken(plan, r"weight=\d+ is not a tensor id")
    assert names_task(msg, plan, ti)


def test_operand_shape_mismatch(plan):
    # QKV wired to the Wo matrix: (72, 72) instead of (120, 72).
    ti = first(plan, "RMSNORM_GEMV")
    plan.tasks[ti]["weight"] = plan.tensor_id("layers.0.wo")
    broken(plan, r"weight is tensor 'layers.0.wo' \(72, 72\) BF16; RMSNORM_GEMV needs "
                 r"\(120, 72\) BF16")


def test_two_writers_of_one_row(plan):
    ti = first(plan, "EMBED", layer=0, nth=2)
    plan.tasks[ti]["row_begin"] -= 1  # now also writes the previous task's last row
    msg = broken(plan, r"two writers")
    assert names_task(msg, plan, ti) and names_task(msg, plan, ti - 1), msg


def test_rows_of_a_split_wave_left_out(plan):
    # Layer 1's ATTN_OUT without its last row: x0's row would keep adding up across layers.
    ti = first(plan, "ATTN_OUT", layer=1, nth=5)
    plan.tasks[ti]["row_end"] -= 1
    msg = broken(plan, r"rows \[71, 72\) are in no task: the tasks of a ATTN_OUT wave cover")
    ti = first(plan, "FFN", layer=0, nth=2)
    plan.tasks[ti]["row_begin"] += 1
    broken(plan, r"rows \[\d+, \d+\) are in no task of wave 4")


def test_ffn_rows_planned_twice(plan):
    # Two FFN tasks with one row in common would add that row's part into x0 twice.
    ti = first(plan, "FFN", layer=1, nth=3)
    plan.tasks[ti]["row_begin"] -= 1
    msg = broken(plan, r"rows \[\d+, \d+\) are in two tasks of wave 8")
    assert names_task(msg, plan, ti), msg


def test_ffn_slot_twice(plan):
    f0, f1 = first(plan, "FFN", layer=0), first(plan, "FFN", layer=0, nth=1)
    plan.tasks[f1]["slot"] = plan.tasks[f0]["slot"]
    broken(plan, r"FFN slots .* must be each of 0..5 once")


def test_two_writers_of_one_candidate_slot(plan):
    ti = first(plan, "LM_HEAD", nth=3)
    plan.tasks[ti]["slot"] = 2
    broken(plan, r"LM_HEAD slots must be each of 0..5 once")


def test_a_read_before_its_write(plan):
    # Layer 0's ATTN_OUT merges a buffer of attn's shape that no task writes.
    ghost = dict(plan.buffers[plan.buffer_id("attn")], name="ghost")
    plan.buffers.append(ghost)
    for t in plan.tasks:
        if t["opcode"] == OP["ATTN_OUT"] and t["layer"] == 0:
            t["in_buf"] = len(plan.buffers) - 1
    msg = broken(plan, r"reads ghost\[0, \d+\) before any earlier epoch of this token wrote it")
    assert names_task(msg, plan, first(plan, "ATTN_OUT")), msg


def test_sync_none_before_a_dependent_read(plan):
    # No barrier after EMBED: QKV would read x0 while EMBED still writes it.
    plan.waves[0]["sync"] = spec.SYNC["SYNC_NONE"]
    msg = broken(plan, r"reads x0\[\d+, \d+\) which task \d+ \(EMBED, wave 0, worker \d+\) "
                       r"writes in the same barrier epoch \(no barrier")
    assert names_task(msg, plan, first(plan, "RMSNORM_GEMV")), msg


def test_last_wave_must_end_in_a_barrier(plan):
    # The next token's selection reads the candidates LM_HEAD writes.
    plan.waves[-1]["sync"] = spec.SYNC["SYNC_NONE"]
    broken(plan, r"wave \d+ \(last\): must end in a grid barrier")


def refused(plan, edit, match):
    """broken() on a copy of `plan` that edit(copy) changed; returns the message."""
    p = copy.deepcopy(plan)
    edit(p)
    return broken(p, match)


def test_tensor_reserved_and_empty_shapes(plan):
    refused(plan, lambda p: p.tensors[1].update(reserved=5),
            r"tensor 1 \('layers.0.attn_norm'\): rows=72 cols=1 must be >= 1, reserved must be 0")
    refused(plan, lambda p: p.tensors[1].update(rows=0),
            r"tensor 1 \('layers.0.attn_norm'\): rows=0 cols=1 must be >= 1")


def test_wave_sync_and_layer(plan):
    refused(plan, lambda p: p.waves[3].update(sync=99), r"wave 3: sync=99 is not one of")
    refused(plan, lambda p: p.waves[3].update(layer=1),  # wave 3 is layer 0's ATTN_OUT
            r"wave 3: layer=1, expected 0 \(ATTN_OUT wave\)")
    refused(plan, lambda p: p.waves[0].update(layer=0),  # EMBED belongs to no layer
            r"wave 0: layer=0, expected NONE_ID \(EMBED wave\)")


def test_task_reserved_fields(plan):
    for field in ("reserved0", "reserved1"):
        refused(plan, lambda p: p.tasks[first(p, "FFN")].update({field: 1}),
                r"reserved fields must be 0")


def test_lm_head_rows_must_cover_the_vocabulary(plan):
    last = max(i for i, t in enumerate(plan.tasks) if t["opcode"] == OP["LM_HEAD"])
    refused(plan, lambda p: p.tasks[last].update(row_end=p.tasks[last]["row_end"] - 1),
            r"LM_HEAD tasks cover 96 rows, the vocabulary has 97")  # the last row in no task


def test_table_and_meta_consistency(plan):
    refused(plan, lambda p: p.tensors[1].update(dtype=spec.DTYPES["CANDIDATE"]),
            r"tensor 1 .*: dtype \d+ is not BF16 or F32")
    refused(plan, lambda p: p.buffers[1].update(elements=0),
            r"buffer 1 .*: kind \d+, dtype \d+, elements 0: invalid")
    refused(plan, lambda p: p.params.pop("lm_head_slots"),
            r"meta\['plan'\] is missing \['lm_head_slots'\]")
    refused(plan, lambda p: p.params.update(buffers={**p.params["buffers"],
                                                     "x1": p.params["buffers"]["x0"]}),
            r"meta\['plan'\]\['buffers'\]\['x1'\]=\d+ is not the buffer named 'x1'")
    refused(plan, lambda p: p.params["buffers"].pop("logits"),
            r"meta\['plan'\]\['buffers'\] has no 'logits'")
    refused(plan, lambda p: p.params["tensors"].pop("rope_inv_freq"),
            r"meta\['plan'\]\['tensors'\] has no 'rope_inv_freq'")
    refused(plan, lambda p: p.params["tensors"].update(embed=1),
            r"meta\['plan'\]\['tensors'\]\['embed'\]=1 is not the tensor named 'embed'")
    # Beyond what host/package.cc takes (format_spec.META_LIMITS): refused before it is written.
    refused(plan, lambda p: p.params.update(attention_min_chunk=2**20 + 1),
            r"meta value plan\.attention_min_chunk = 1048577 is beyond the runtime's limit of 1048576")
    refused(plan, lambda p: p.buffers[p.params["buffers"]["cand"]].update(elements=7),
            r"cand holds 7 slots, meta lm_head_slots = 6")


@pytest.mark.parametrize("key", ["max_context", "attention_chunks", "attention_min_chunk",
                                 "ffn_parts", "lm_head_slots"])
def test_meta_counts_must_be_positive_ints(plan, key):
    for bad in (0, 2.0):
        refused(plan, lambda p: p.params.update({key: bad}),
                rf"meta\['plan'\]\['{key}'\]={bad!r} must be a positive int")


def test_max_context_of_one_is_refused(plan):
    """make_plan refuses max_context=1; so do the validators (a package written before that
    rule holds no position for a new token)."""
    refused(plan, lambda p: p.params.update(max_context=1),
            r"meta\['plan'\]\['max_context'\]=1 leaves no position for a new token after the "
            r"prompt's first; re-plan with --max_context=2 or more")


def test_a_package_meta_without_its_objects(tmp_path):
    import pathlib
    from planner import package as package_lib
    golden = sorted((pathlib.Path(__file__).parents[2] / "tests" / "golden").glob("*.tpkg"))
    assert golden, "no golden packages"
    for key in ("model", "plan", "target"):
        view = package_lib.read_package(str(golden[0]))
        view.meta[key] = [1]
        broken(view, rf"meta\['{key}'\] is missing or not an object")


def _one_more_wave(p):
    p.waves.append(dict(p.waves[-1]))
    p.params["waves"] += 1


def _one_more_task(p):
    p.tasks.append(dict(p.tasks[-1]))
    p.params["tasks"] += 1


def _one_attention_task_fewer(p):
    wave = p.tasks[first(p, "ATTENTION")]["wave"]
    last = p.waves[wave]["first_task"] + p.waves[wave]["task_count"] - 1
    del p.tasks[last]
    for w in p.waves[wave + 1:]:
        w["first_task"] -= 1
    p.waves[wave]["task_count"] -= 1
    p.params["tasks"] -= 1


def test_wave_and_task_tables(plan):
    refused(plan, _one_more_wave, r"\d+ waves; a plan of 2 layers has 4\*2\+2 = 10")
    refused(plan, lambda p: p.waves[-1].update(task_count=p.waves[-1]["task_count"] + 1),
            r"wave 9: tasks \[\d+, \d+\) run past the \d+ tasks")
    refused(plan, _one_more_task, r"waves cover \d+ tasks, the table holds \d+")
    refused(plan, lambda p: p.tasks[first(p, "FFN")].update(layer=1), r"layer 1 in a wave of layer 0")


def test_attention_task_fields(plan):
    a = first(plan, "ATTENTION")
    refused(plan, lambda p: p.tasks[a].update(param2=p.tasks[a]["param2"] + 1),
            r"n_chunks=2 min_chunk=5, meta says 2 / 4")
    refused(plan, lambda p: p.tasks[a].update(param0=3),  # 3 K/V heads: 0..2
            r"kv_head=3 chunk=\d+ must be < 3 heads / 2 chunks")
    refused(plan, _one_attention_task_fewer,
            rf"wave {plan.tasks[a]['wave']}: 5 attention tasks, need every kv head x chunk = 3 x 2")


def test_positions_outside_the_cache():
    p = plan_lib.make_plan(known_configs.tiny(), small_target(6), max_context=40)
    with pytest.raises(ValueError, match=r"position 40 outside \[0, max_context=40\)"):
        validate.validate_plan(p, positions=[40])


def test_bad_opcode(plan):
    ti = first(plan, "FFN", nth=1)
    plan.tasks[ti]["opcode"] = 99
    msg = broken(plan, r"opcode 99 is not one of")
    assert names_task(msg, plan, ti), msg
    plan.tasks[ti]["opcode"] = 0  # a zeroed record
    broken(plan, r"opcode 0 is not one of")


def test_opcode_in_the_wrong_wave(plan):
    ti = first(plan, "FFN")
    plan.tasks[ti]["opcode"] = OP["ATTN_OUT"]
    broken(plan, r"wave 4 is a FFN wave")


def test_wrong_fingerprint(plan):
    other = small_target(6, fingerprint="0123abcd")
    with pytest.raises(PlanError, match=r"worker_fingerprint: package 'unprobed', this GPU "
                                        r"'0123abcd'.*never probed.*Re-plan"):
        validate.validate_plan(plan, target=other)
    meta_target = small_target(6, fingerprint="0123abcd").meta_json()
    validate.check_target(meta_target, other)  # same GPU, same worker build
    with pytest.raises(PlanError, match=r"fingerprint: package '0123abcd', this GPU 'ffff'"):
        validate.check_target(meta_target, small_target(6, fingerprint="ffff"))
    h200 = target_lib.resolve_target("h200")
    with pytest.raises(PlanError, match=r"name: package 'test GPU', this GPU 'NVIDIA H200'.*"
                                        r"compute_capability.*sm_count: package 6, this GPU 132"):
        validate.check_target(meta_target, h200)


# --- more rules ------------------------------------------------------------------------------

def test_unused_fields_must_be_none_or_zero(plan):
    ti = first(plan, "EMBED")
    plan.tasks[ti]["norm"] = plan.tensor_id("layers.0.attn_norm")
    broken(plan, r"norm=\d+; EMBED does not use it \(NONE_ID\)")
    plan.tasks[ti]["norm"] = NONE
    plan.tasks[ti]["param2"] = 7
    broken(plan, r"param2=7; EMBED does not use it \(0\)")


def test_required_field_missing(plan):
    plan.tasks[first(plan, "FFN")]["weight3"] = NONE
    broken(plan, r"weight3 is NONE_ID; FFN needs it")


def test_wrong_buffer_kind(plan):
    ti = first(plan, "ATTENTION")
    plan.tasks[ti]["aux_buf"] = plan.buffer_id("x1")
    broken(plan, r"aux_buf is buffer 'x1' \(ACTIVATION F32\); ATTENTION needs KV_CACHE BF16")


def test_weight_of_another_layer(plan):
    ti = first(plan, "ATTN_OUT", layer=1)
    plan.tasks[ti]["weight"] = plan.tensor_id("layers.0.wo")
    broken(plan, r"weight is tensor 'layers.0.wo', not one of layer 1's")


def test_wave_records_must_tile_the_tasks(plan):
    plan.waves[3]["task_count"] -= 1
    broken(plan, r"wave 4: first_task=\d+ task_count=\d+; expected first_task=")


def test_tasks_sorted_by_worker(plan):
    w = plan.waves[1]
    a = w["first_task"]
    plan.tasks[a], plan.tasks[a + 1] = plan.tasks[a + 1], plan.tasks[a]
    broken(plan, r"tasks of a wave must be sorted by worker")


def test_task_in_wrong_wave_field(plan):
    plan.tasks[first(plan, "FFN")]["wave"] += 1
    broken(plan, r"says wave 5 \(tasks must be sorted by wave\)")


def test_worker_out_of_range(plan):
    ti = first(plan, "LM_HEAD", nth=5)
    plan.tasks[ti]["worker"] = 6
    broken(plan, r"worker 6 >= 6 workers")


def test_too_many_ffn_parts_in_meta(plan):
    plan.params["ffn_parts"] = 512
    broken(plan, r"ffn_parts'\]=512: the fixed-point residual takes at most 511")


def test_residual_must_be_fixed64(plan):
    x0 = plan.buffers[plan.buffer_id("x0")]
    x0["dtype"] = spec.DTYPES["F32"]
    broken(plan, r"aux_buf is buffer 'x0' \(ACTIVATION F32\); ATTN_OUT needs ACTIVATION FIXED64"
           r"|in_buf is buffer 'x0' \(ACTIVATION F32\); RMSNORM_GEMV needs ACTIVATION FIXED64"
           r"|out_buf is buffer 'x0' \(ACTIVATION F32\); EMBED needs ACTIVATION FIXED64")


def test_read_of_the_residual_while_the_ffn_adds_to_it(plan):
    # An FFN wave without its barrier: the next QKV reads x0 while the FFN tasks add to it.
    w = plan.tasks[first(plan, "FFN", layer=0)]["wave"]
    plan.waves[w]["sync"] = spec.SYNC["SYNC_NONE"]
    broken(plan, r"reads x0\[0, \d+\) while task \d+ \(FFN, .*accumulates into it in the "
           r"same barrier epoch")


def test_seed_and_adds_need_a_barrier_between(plan):
    # ATTN_OUT seeds x0 with fix(x1) before the FFN adds: without the barrier between them
    # the seed would meet the adds in one epoch.
    w = plan.tasks[first(plan, "ATTN_OUT", layer=1)]["wave"]
    plan.waves[w]["sync"] = spec.SYNC["SYNC_NONE"]
    broken(plan, r"(reads|writes) x0\[\d+, \d+\) while task \d+ \(FFN, .*accumulates into it")


def test_accumulate_needs_an_earlier_write(plan):
    # Layer 0's FFN adds to a FIXED64 buffer that nothing seeded this token.
    plan.buffers.append(dict(name="y0", kind=spec.BUFFER_KINDS["ACTIVATION"],
                             dtype=spec.DTYPES["FIXED64"], elements=72))
    for t in plan.tasks:
        if t["opcode"] == OP["FFN"] and t["layer"] == 0:
            t["out_buf"] = len(plan.buffers) - 1
    broken(plan, r"accumulates into y0\[0, 72\) before any earlier epoch of this token wrote it")


def test_attention_head_chunk_planned_twice(plan):
    ti = first(plan, "ATTENTION", nth=1)
    plan.tasks[ti]["slot"] = 0
    broken(plan, r"kv_head 0 chunk 0 is planned twice")


def test_attention_chunks_disagree_with_meta(plan):
    for t in plan.tasks:
        if t["opcode"] == OP["ATTN_OUT"]:
            t["param1"] = 1
    broken(plan, r"merges 1 chunks, meta attention_chunks=2")


def test_kv_cache_of_wrong_size(plan):
    plan.buffers[plan.buffer_id("kv_cache")]["elements"] //= 2
    broken(plan, r"kv_cache holds \d+ elements, layers\*2\*max_context\*KV")


def test_tensor_table_rules(plan):
    p = copy.deepcopy(plan)
    p.tensors[3]["offset"] += 2
    broken(p, r"offset \d+ is not a multiple of TENSOR_ALIGN")
    p = copy.deepcopy(plan)
    p.tensors[3]["offset"] = p.tensors[2]["offset"]
    broken(p, r"overlap in the weights section")
    p = copy.deepcopy(plan)
    p.weights_bytes -= 1
    broken(p, r"run past the weights section")
    p = copy.deepcopy(plan)
    p.tensors[4]["name"] = p.tensors[5]["name"]
    broken(p, r"name must be unique")


def test_meta_counts(plan):
    plan.params["tasks"] += 1
    broken(plan, r"meta says \d+ waves / \d+ tasks")


def test_meta_workers_fit_target(plan):
    for workers in (7, 0):
        plan.params["workers"] = workers
        broken(plan, rf"plan workers={workers} but the target has 6 SMs")


# --- task_access ----------------------------------------------------------------------------

def test_attention_chunks_tile_the_context_and_the_last_holds_pos():
    for C in (1, 2, 3, 7):
        for min_chunk in (1, 4, 128):
            for ctx in (1, 2, 5, 63, 64, 65, 300):
                spans = [validate.attention_chunk(ctx, C, c, min_chunk) for c in range(C)]
                assert spans[-1][1] == ctx and spans[-1][0] <= ctx - 1
                assert spans[0][0] == 0
                for (a0, b0), (a1, b1) in zip(spans, spans[1:]):
                    assert b0 == a1 and a0 <= b0


def test_task_access_attention():
    # 9:3 heads, HD 8: Q = 72, KV = 24; kv head 1 of 3, chunk c of C = 2, layer 1.
    ctx = AccessContext(H=72, F=100, V=97, L=2, NH=9, NKV=3, HD=8, max_context=40, pos=9)
    t = dict(opcode=OP["ATTENTION"], row_begin=0, row_end=8, in_buf=2, aux_buf=7, out_buf=3,
             slot=1, param0=1, param1=2, param2=4, layer=1)
    reads, writes = task_access(t, ctx)
    K, V = (1 * 2 + 0) * 40 * 24, (1 * 2 + 1) * 40 * 24
    # ctx 10, C 2, S = max(5, 4) = 5: chunk 1 = positions [5, 10), cache rows [5, 9).
    assert reads == [(2, 24, 48), (2, 72 + 8, 72 + 16), (2, 96 + 8, 96 + 16),
                     (7, K + 5 * 24 + 8, K + 8 * 24 + 16), (7, V + 5 * 24 + 8, V + 8 * 24 + 16)]
    assert writes == [(3, (9 + 3) * 10, (9 + 6) * 10),
                      (7, K + 9 * 24 + 8, K + 9 * 24 + 16), (7, V + 9 * 24 + 8, V + 9 * 24 + 16)]
    t["slot"] = 0  # not the last chunk: no k/v of pos, no cache write
    reads, writes = task_access(t, ctx)
    assert reads == [(2, 24, 48), (7, K + 8, K + 4 * 24 + 16), (7, V + 8, V + 4 * 24 + 16)]
    assert writes == [(3, 30, 60)]
    ctx0 = AccessContext(**{**ctx.__dict__, "pos": 0})
    assert task_access(t, ctx0) == ([(2, 24, 48)], [(3, 30, 60)])


def test_task_access_attn_out_ffn_and_lm_head():
    ctx = AccessContext(H=72, F=100, V=97, L=2, NH=9, NKV=3, HD=8, max_context=40, pos=0)
    t = dict(opcode=OP["ATTN_OUT"], row_begin=10, row_end=20, in_buf=3, aux_buf=0, out_buf=1,
             param1=2, layer=0)
    assert task_access(t, ctx) == ([(3, 0, 2 * 9 * 10), (0, 10, 20)], [(1, 10, 20), (0, 10, 20)])
    assert validate.task_accumulates(t, ctx) == []
    t = dict(opcode=OP["FFN"], row_begin=10, row_end=20, in_buf=1, aux_buf=spec.NONE_ID, out_buf=0,
             slot=3, layer=0)
    assert task_access(t, ctx) == ([(1, 0, 72)], [])
    assert validate.task_accumulates(t, ctx) == [(0, 0, 72)]
    t = dict(opcode=OP["LM_HEAD"], row_begin=40, row_end=60, in_buf=0, aux_buf=6, out_buf=5,
             slot=2, layer=0)
    assert task_access(t, ctx) == ([(0, 0, 72)], [(5, 40, 60), (6, 2, 3)])


def test_llama_1b_validates_quickly():
    import time
    p = plan_lib.make_plan(known_configs.llama_3_2_1b(), target_lib.resolve_target("h200"),
                           max_context=4096)
    t0 = time.perf_counter()
    validate.validate_plan(p)
    assert time.perf_counter() - t0 < 5


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
