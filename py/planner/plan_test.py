"""Tests for planner.plan and planner.target: wave layout, row coverage, balance, targets."""

import json
import sys

import pytest

from planner import format_spec as spec
from planner import known_configs
from planner import plan as plan_lib
from planner import target as target_lib
from planner import validate

OP = spec.OPCODES
NAMES = {v: k for k, v in OP.items()}


def small_target(workers: int) -> target_lib.Target:
    return target_lib.Target(name="test GPU", compute_capability=(8, 6), sm_count=workers,
                             workers_per_sm=1, threads_per_worker=128,
                             registers_per_thread=64, shared_memory_per_worker=0,
                             worker_fingerprint="unprobed")


def wave_tasks(p, w):
    wave = p.waves[w]
    return p.tasks[wave["first_task"]:wave["first_task"] + wave["task_count"]]


def row_space(c, op):
    Q, KV = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
    return {"EMBED": c.hidden_size, "RMSNORM_GEMV": Q + 2 * KV, "ATTN_OUT": c.hidden_size,
            "FFN": c.intermediate_size,
            "LM_HEAD": c.vocab_size}[op]


PLANS = {
    "tiny_w20": lambda: plan_lib.make_plan(known_configs.tiny(), small_target(20),
                                           max_context=64),
    # More workers than H rows: empty ranges must be skipped, not planned.
    "tiny_w132": lambda: plan_lib.make_plan(known_configs.tiny(hidden=64, ffn=128, heads=4,
                                                               kv_heads=2, vocab=50,
                                                               tied=False),
                                            small_target(132), max_context=32, workers=132),
    "tiny_w7_chunks5": lambda: plan_lib.make_plan(known_configs.tiny(), small_target(7),
                                                  max_context=300, attention_chunks=5,
                                                  attention_min_chunk=16),
}


@pytest.fixture(params=sorted(PLANS))
def any_plan(request):
    return PLANS[request.param]()


# --- split_rows --------------------------------------------------------------------------

@pytest.mark.parametrize("n,w", [(3072, 132), (2048, 132), (100, 20), (72, 20), (5, 132),
                                 (1, 1), (128256, 132)])
def test_split_rows_is_contiguous_exact_and_even(n, w):
    parts = plan_lib.split_rows(n, w)
    assert len(parts) == min(n, w)
    assert parts[0][1] == 0 and parts[-1][2] == n
    for (_, _, e0), (_, a1, _) in zip(parts, parts[1:]):
        assert e0 == a1
    sizes = [e - a for _, a, e in parts]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
    for i, a, e in parts:  # worker i gets [floor(i*n/w), floor((i+1)*n/w))
        assert (a, e) == (i * n // w, (i + 1) * n // w)


# --- layout ------------------------------------------------------------------------------

def test_waves_follow_the_format_order(any_plan):
    p, L = any_plan, any_plan.config.num_layers
    assert len(p.waves) == 4 * L + 2 == p.params["waves"]
    ops = [NAMES[wave_tasks(p, w)[0]["opcode"]] for w in range(len(p.waves))]
    assert ops == (["EMBED"] + ["RMSNORM_GEMV", "ATTENTION", "ATTN_OUT", "FFN"] * L
                   + ["LM_HEAD"])
    assert [w["layer"] for w in p.waves] == (
        [spec.NONE_ID] + [l for l in range(L) for _ in range(4)] + [spec.NONE_ID])
    assert all(w["sync"] == spec.SYNC["SYNC_GRID_BARRIER"] for w in p.waves)


def test_every_task_has_one_wave_and_worker_and_is_sorted(any_plan):
    p = any_plan
    assert p.params["tasks"] == len(p.tasks)
    seen = 0
    for w, wave in enumerate(p.waves):
        assert wave["first_task"] == seen
        seen += wave["task_count"]
        ts = wave_tasks(p, w)
        assert all(t["wave"] == w for t in ts)
        assert all(0 <= t["worker"] < p.params["workers"] for t in ts)
        assert [t["worker"] for t in ts] == sorted(t["worker"] for t in ts)
        assert len({NAMES[t["opcode"]] for t in ts}) == 1
    assert seen == len(p.tasks)
    assert [(t["wave"], t["worker"]) for t in p.tasks] == sorted(
        (t["wave"], t["worker"]) for t in p.tasks)


def test_row_coverage_is_exact_for_every_row_split_wave(any_plan):
    p, c = any_plan, any_plan.config
    for w in range(len(p.waves)):
        ts = wave_tasks(p, w)
        op = NAMES[ts[0]["opcode"]]
        if op == "ATTENTION":
            continue
        n = row_space(c, op)
        covered = [0] * n
        for t in ts:
            assert t["row_begin"] < t["row_end"]
            for r in range(t["row_begin"], t["row_end"]):
                covered[r] += 1
        assert covered == [1] * n, f"wave {w} {op}"
        # Contiguous split over all workers: worker i owns floor(i*n/W)...
        W = p.params["workers"]
        for t in ts:
            i = t["worker"]
            assert (t["row_begin"], t["row_end"]) == (i * n // W, (i + 1) * n // W)


def test_ffn_parts_slots_and_the_fixed_point_residual(any_plan):
    p, c = any_plan, any_plan.config
    parts = p.params["ffn_parts"]
    assert parts == min(c.intermediate_size, p.params["workers"])
    for w in range(len(p.waves)):
        ts = wave_tasks(p, w)
        op = NAMES[ts[0]["opcode"]]
        if op == "FFN":
            assert [t["slot"] for t in ts] == list(range(parts))
            for t in ts:
                lt = {k: p.tensors[t[k]]["name"] for k in ("weight", "weight2", "weight3",
                                                            "norm")}
                l = t["layer"]
                assert lt == {"weight": f"layers.{l}.w_gate", "weight2": f"layers.{l}.w_up",
                              "weight3": f"layers.{l}.w_down_t", "norm": f"layers.{l}.ffn_norm"}
                # The part goes straight into the residual: x1 in, x0 (FIXED64) out.
                assert (t["in_buf"], t["out_buf"]) == (p.buffer_id("x1"), p.buffer_id("x0"))
        if op == "ATTN_OUT":  # reads x0 and seeds it with fix(x1) for the FFN's adds
            assert all((t["aux_buf"], t["out_buf"]) == (p.buffer_id("x0"), p.buffer_id("x1"))
                       for t in ts)
    x0 = p.buffers[p.buffer_id("x0")]
    assert (x0["dtype"], x0["elements"]) == (spec.DTYPES["FIXED64"], c.hidden_size)
    assert "ffn_part" not in p.params["buffers"]


def test_attention_tasks(any_plan):
    p, c = any_plan, any_plan.config
    C, W = p.params["attention_chunks"], p.params["workers"]
    for w in range(len(p.waves)):
        ts = wave_tasks(p, w)
        if NAMES[ts[0]["opcode"]] != "ATTENTION":
            continue
        assert len(ts) == c.num_kv_heads * C
        pairs = sorted((t["param0"], t["slot"]) for t in ts)
        assert pairs == [(kv, ch) for kv in range(c.num_kv_heads) for ch in range(C)]
        for t in ts:
            assert t["worker"] == (t["param0"] * C + t["slot"]) % W
            assert (t["param1"], t["param2"]) == (C, p.params["attention_min_chunk"])
            assert (t["row_begin"], t["row_end"]) == (0, c.head_dim)
            assert p.tensors[t["weight2"]]["name"] == "rope_inv_freq"
            assert t["aux_buf"] == p.buffer_id("kv_cache")
            assert t["weight"] == t["weight3"] == t["norm"] == spec.NONE_ID
    assert p.buffers[p.buffer_id("attn")]["elements"] == C * c.num_heads * (c.head_dim + 2)


def test_default_attention_chunks_fill_the_grid_with_long_enough_chunks():
    # min(W // NKV, ceil(max_context / 192)), at least 1 (plan.ATTENTION_CHUNK_MIN_POSITIONS).
    llama, smol = known_configs.llama_3_2_1b(), known_configs.smollm2_135m()
    for config, workers, max_context, chunks in (
            (llama, 132, 4096, 16), (llama, 20, 4096, 2), (llama, 7, 4096, 1),  # the grid caps
            (smol, 132, 4096, 22),  # 3 K/V heads: 44 would fit; 4096 / 22 = 187 positions
            (llama, 132, 256, 2), (llama, 132, 192, 1), (llama, 132, 193, 2)):
        p = plan_lib.make_plan(config, small_target(workers), max_context=max_context)
        assert p.params["attention_chunks"] == chunks, (config.num_kv_heads, workers, max_context)


def test_default_attention_min_chunk_by_kv_heads():
    # plan.default_attention_min_chunk: 128 from 8 K/V heads up (the 1B), else 32 (SmolLM2's 3).
    llama, smol = known_configs.llama_3_2_1b(), known_configs.smollm2_135m()
    for config, min_chunk in ((llama, 128), (smol, 32)):
        p = plan_lib.make_plan(config, small_target(132), max_context=4096)
        assert p.params["attention_min_chunk"] == min_chunk, config.num_kv_heads
        assert {t["param2"] for t in p.tasks if t["opcode"] == OP["ATTENTION"]} == {min_chunk}
    assert [plan_lib.default_attention_min_chunk(n) for n in (1, 7, 8, 32)] == [32, 32, 128, 128]
    p = plan_lib.make_plan(llama, small_target(132), max_context=4096, attention_min_chunk=48)
    assert p.params["attention_min_chunk"] == 48  # an explicit value wins


def test_default_workers_multiple_of_32_keeping_95_percent():
    # plan.default_workers: 132 -> 128 (the H200), else all when a multiple of 32 keeps < 95%.
    assert [plan_lib.default_workers(n) for n in (132, 128, 20, 108, 114, 1, 33, 528, 540)] == \
        [128, 128, 20, 108, 114, 1, 32, 511, 511]  # at most FFN_MAX_PARTS
    c = known_configs.tiny(ffn=256)  # 2 FFN rows a worker: every worker has a task
    p = plan_lib.make_plan(c, small_target(132), max_context=64)
    assert p.params["workers"] == 128
    assert {t["worker"] for t in p.tasks if t["opcode"] == OP["FFN"]} == set(range(128))
    p = plan_lib.make_plan(c, small_target(132), max_context=64, workers=132)  # explicit wins
    assert p.params["workers"] == 132 and p.params["ffn_parts"] == min(132, c.intermediate_size)
    validate.validate_plan(p)
    for bad in (0, 133, 2.5, True):  # (and > FFN_MAX_PARTS parts: test_too_many_ffn_parts)
        with pytest.raises(ValueError, match="workers"):
            plan_lib.make_plan(c, small_target(132), max_context=64, workers=bad)


@pytest.mark.parametrize("workers_per_sm", [4, 5])
def test_default_plan_fits_the_ffn_parts_limit(workers_per_sm):
    # 132 SMs x 4 or 5 workers (a probe's target): the default stays within FFN_MAX_PARTS.
    c = known_configs.tiny(ffn=1024)
    t = target_lib.Target(name="test GPU", compute_capability=(9, 0), sm_count=132,
                          workers_per_sm=workers_per_sm, threads_per_worker=128,
                          registers_per_thread=64, shared_memory_per_worker=0,
                          worker_fingerprint="unprobed")
    p = plan_lib.make_plan(c, t, max_context=16)
    assert p.params["workers"] == p.params["ffn_parts"] == 511
    validate.validate_plan(p)


def test_too_many_ffn_parts():
    # format_spec.FFN_MAX_PARTS: the fixed-point residual's headroom.
    c = known_configs.tiny(ffn=1024)
    p = plan_lib.make_plan(c, small_target(600), max_context=64, workers=511)
    assert p.params["ffn_parts"] == 511
    with pytest.raises(ValueError, match=r"512 FFN parts .* at most 511"):
        plan_lib.make_plan(c, small_target(600), max_context=64, workers=512)
    p = plan_lib.make_plan(c, small_target(600), max_context=64, workers=600, ffn_parts=300)
    assert p.params["workers"] == 600 and p.params["ffn_parts"] == 300
    validate.validate_plan(p)


def test_wave_parts():
    # make_plan's qkv_parts, attn_out_parts, ffn_parts, lm_head_slots: each wave's tasks on
    # workers 0..parts-1, rows split evenly and covered once; the others keep `workers`.
    c = known_configs.tiny(ffn=256)
    p = plan_lib.make_plan(c, small_target(20), max_context=64, qkv_parts=7, attn_out_parts=3,
                           ffn_parts=5, lm_head_slots=2)
    validate.validate_plan(p)
    assert p.params["workers"] == 20 and p.params["ffn_parts"] == 5
    assert p.params["lm_head_slots"] == 2
    assert plan_lib.tasks_by_wave_kind(p) == [("EMBED", 20), ("QKV", 7), ("ATTENTION", 3),
                                              ("ATTN_OUT", 3), ("FFN", 5), ("LM_HEAD", 2)]
    qkv_rows = (c.num_heads + 2 * c.num_kv_heads) * c.head_dim
    for op, parts, rows in (("RMSNORM_GEMV", 7, qkv_rows),
                            ("ATTN_OUT", 3, c.hidden_size), ("FFN", 5, c.intermediate_size),
                            ("LM_HEAD", 2, c.vocab_size)):
        for wave in p.waves:
            tasks = p.tasks[wave["first_task"]:wave["first_task"] + wave["task_count"]]
            if tasks[0]["opcode"] != OP[op]:
                continue
            assert [t["worker"] for t in tasks] == list(range(parts)), op
            assert [(t["row_begin"], t["row_end"]) for t in tasks] == \
                [(a, e) for _, a, e in plan_lib.split_rows(rows, parts)], op
    default = plan_lib.make_plan(c, small_target(20), max_context=64)
    assert plan_lib.tasks_by_wave_kind(default) == [("EMBED", 20), ("QKV", 20), ("ATTENTION", 3),
                                                    ("ATTN_OUT", 20), ("FFN", 20), ("LM_HEAD", 20)]
    for name in ("qkv_parts", "attn_out_parts", "ffn_parts", "lm_head_slots"):
        for bad in (0, 21, 2.0, True, "4"):
            with pytest.raises(ValueError, match=rf"{name}=.* must be an int in \[1, workers=20\]"):
                plan_lib.make_plan(c, small_target(20), max_context=64, **{name: bad})


def test_tensors_and_buffers_tied_and_untied():
    for tied in (True, False):
        c = known_configs.tiny(tied=tied)
        p = plan_lib.make_plan(c, small_target(20), max_context=64)
        names = [t["name"] for t in p.tensors]
        assert ("lm_head" in names) == (not tied)
        lm = [t for t in p.tasks if t["opcode"] == OP["LM_HEAD"]]
        want = p.tensor_id("embed") if tied else p.tensor_id("lm_head")
        assert all(t["weight"] == want for t in lm)
        assert [t["slot"] for t in lm] == list(range(p.params["lm_head_slots"]))
        H, F, Q, KV = 72, 100, 72, 24
        shapes = {t["name"]: (t["rows"], t["cols"], t["dtype"]) for t in p.tensors}
        bf16, f32 = spec.DTYPES["BF16"], spec.DTYPES["F32"]
        assert shapes["layers.1.wqkv"] == (Q + 2 * KV, H, bf16)
        assert shapes["layers.0.wo"] == (H, Q, bf16)
        assert shapes["layers.0.w_down_t"] == (F, H, bf16)
        assert shapes["layers.0.attn_norm"] == (H, 1, bf16)
        assert shapes["rope_inv_freq"] == (4, 1, f32)
        assert all(t["offset"] % spec.TENSOR_ALIGN == 0 for t in p.tensors)
        bufs = {b["name"]: (b["kind"], b["dtype"], b["elements"]) for b in p.buffers}
        act, f = spec.BUFFER_KINDS["ACTIVATION"], spec.DTYPES["F32"]
        assert bufs["qkv"] == (act, f, Q + 2 * KV)
        assert bufs["logits"] == (act, f, 97)
        assert bufs["cand"] == (spec.BUFFER_KINDS["CANDIDATES"], spec.DTYPES["CANDIDATE"], 20)
        assert bufs["kv_cache"] == (spec.BUFFER_KINDS["KV_CACHE"], bf16, 2 * 2 * 64 * KV)
        assert p.params["tensors"] == {"embed": 0, "rope_inv_freq": p.tensor_id("rope_inv_freq")}
        validate.validate_plan(p)


def test_bad_arguments_are_refused():
    c = known_configs.tiny()
    t = small_target(4)
    for kw, msg in ((dict(max_context=0), "max_context"),
                    (dict(max_context=1), r"max_context=1 must be in \[2, .*one prompt token and one new one"),
                    (dict(max_context=True), "max_context=True"),
                    (dict(max_context=1025), "max_position_embeddings"),
                    (dict(max_context=8, attention_chunks=0), "attention_chunks"),
                    (dict(max_context=8, attention_chunks=9), r"attention_chunks=9 must be an int in \[1, 8\]"),
                    (dict(max_context=8, attention_chunks=True), "attention_chunks"),
                    (dict(max_context=8, attention_min_chunk=0), "attention_min_chunk"),
                    # The runtime's limit, before any packing (2^32 overflowed a uint32 record there).
                    (dict(max_context=8, attention_min_chunk=2**32),
                     r"attention_min_chunk=4294967296 must be an int in \[1, 1048576\] \(the runtime's limit\)")):
        with pytest.raises(ValueError, match=msg):
            plan_lib.make_plan(c, t, **kw)


# --- real model shapes on the shipped targets ------------------------------------------------

@pytest.mark.parametrize("model", ["llama_3_2_1b", "llama_3_2_3b", "llama_3_1_8b", "smollm2_135m"])
@pytest.mark.parametrize("target", ["h200", "rtx3050"])
def test_real_configs_plan_and_validate_on_shipped_targets(model, target):
    c = getattr(known_configs, model)()
    p = plan_lib.make_plan(c, target_lib.resolve_target(target), max_context=4096)
    validate.validate_plan(p)
    assert p.params["workers"] == {"h200": 128, "rtx3050": 20}[target]  # default_workers


def test_llama_1b_bytes_match_the_measured_floor():
    p = plan_lib.make_plan(known_configs.llama_3_2_1b(), target_lib.resolve_target("h200"),
                           max_context=4096)
    # docs/PERFORMANCE.md: 2,471,628,928 bytes = 2,471,628,800 of weights + the 32-entry f32 RoPE table.
    assert plan_lib.streamed_bytes_per_token(p) == 2_471_628_800 + 128
    assert plan_lib.kv_bytes_per_position(p.config) == 32 * 1024
    assert plan_lib.floor_ms_per_token(p, 4268) == pytest.approx(0.579, abs=0.001)
    assert plan_lib.floor_ms_per_token(p, 4268, 4096) == pytest.approx(0.610, abs=0.001)


@pytest.mark.parametrize("model, params, embed, rope_entries", [
    # Published parameter counts (model cards: 3.21B, 8.03B), embedding table included.
    ("llama_3_2_3b", 3_212_749_824, None, 64),  # tied: the table is the LM head, read once
    ("llama_3_1_8b", 8_030_261_248, 128_256 * 4_096, 64),  # untied: EMBED reads one row
])
def test_llama_3b_8b_bytes_from_their_parameter_counts(model, params, embed, rope_entries):
    config = getattr(known_configs, model)()
    p = plan_lib.make_plan(config, target_lib.resolve_target("h200"), max_context=4096)
    weights = 2 * (params if embed is None else params - embed + config.hidden_size)
    assert plan_lib.streamed_bytes_per_token(p) == weights + 4 * rope_entries
    assert plan_lib.kv_bytes_per_position(config) == config.num_layers * 2 * 8 * 128 * 2


def test_llama_1b_balance_on_rtx3050_is_within_one_percent():
    p = plan_lib.make_plan(known_configs.llama_3_2_1b(), target_lib.resolve_target("rtx3050"),
                           max_context=4096)
    rows = plan_lib.byte_balance(p)
    assert {r.opcode for r in rows} == {"RMSNORM_GEMV", "ATTN_OUT", "FFN", "LM_HEAD"}
    assert len(rows) == 3 * 16 + 1
    for r in rows:
        assert r.spread <= 0.01, r


def test_llama_1b_balance_on_h200_default_workers_is_exact():
    # 128 workers (default_workers): 3072 / 128 = 24 rows, 2048 / 128 = 16, 8192 / 128 = 64.
    p = plan_lib.make_plan(known_configs.llama_3_2_1b(), target_lib.resolve_target("h200"),
                           max_context=4096)
    by_op = {r.opcode: r for r in plan_lib.byte_balance(p)}
    for op in ("RMSNORM_GEMV", "ATTN_OUT", "FFN"):
        assert by_op[op].spread == 0, op
    assert by_op["FFN"].max_bytes == 64 * 12288


def test_llama_1b_balance_on_h200_is_reported_honestly():
    p = plan_lib.make_plan(known_configs.llama_3_2_1b(), target_lib.resolve_target("h200"),
                           max_context=4096, workers=132)
    by_op = {r.opcode: r for r in plan_lib.byte_balance(p)}
    # One row of rounding: 3072/132 = 23.3 rows of 4 KiB, 2048/132 = 15.5, 8192/132 = 62.1.
    assert (by_op["RMSNORM_GEMV"].min_bytes, by_op["RMSNORM_GEMV"].max_bytes) == (
        23 * 4096, 24 * 4096)
    assert (by_op["ATTN_OUT"].min_bytes, by_op["ATTN_OUT"].max_bytes) == (15 * 4096, 16 * 4096)
    assert (by_op["FFN"].min_bytes, by_op["FFN"].max_bytes) == (62 * 12288, 63 * 12288)
    assert by_op["LM_HEAD"].spread < 0.002
    assert by_op["ATTN_OUT"].spread == pytest.approx(4096 / (2048 * 4096 / 132))
    table = plan_lib.format_balance(plan_lib.byte_balance(p))
    assert "ATTN_OUT" in table and "6.45%" in table


def test_byte_balance_counts_idle_workers():
    # 50 vocab rows on 132 workers: 82 workers stream nothing in LM_HEAD.
    p = PLANS["tiny_w132"]()
    lm = [r for r in plan_lib.byte_balance(p) if r.opcode == "LM_HEAD"][0]
    assert lm.min_bytes == 0 and lm.max_bytes == 64 * 2
    assert lm.mean_bytes == pytest.approx(50 * 128 / 132)


# --- targets ------------------------------------------------------------------------------

def test_shipped_targets_load():
    assert {"h200", "rtx3050"} <= set(target_lib.shipped_targets())
    h = target_lib.resolve_target("h200")
    assert (h.name, h.compute_capability, h.sm_count, h.workers) == (
        "NVIDIA H200", (9, 0), 132, 132)
    assert h.bandwidth_gbps == 4268 and not h.probed
    r = target_lib.resolve_target("rtx3050")
    assert (r.name, r.compute_capability, r.workers, r.bandwidth_gbps) == (
        "NVIDIA GeForce RTX 3050", (8, 6), 20, 212.9)
    assert target_lib.target_from_json(r.to_json()) == r
    assert set(r.meta_json()) == set(r.to_json()) - {"bandwidth_gbps"}


def _write(tmp_path, d):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(d) if isinstance(d, dict) else d)
    return str(path)


def test_target_file_errors(tmp_path):
    good = target_lib.resolve_target("rtx3050").to_json()
    bad = dict(good)
    del bad["sm_count"]
    with pytest.raises(target_lib.TargetError, match=r"missing key\(s\) \['sm_count'\]"):
        target_lib.load_target(_write(tmp_path, bad))
    with pytest.raises(target_lib.TargetError, match=r"unknown key\(s\) \['sm_cout'\]"):
        target_lib.load_target(_write(tmp_path, {**good, "sm_cout": 3}))
    with pytest.raises(target_lib.TargetError, match="sm_count=True must be a positive int"):
        target_lib.load_target(_write(tmp_path, {**good, "sm_count": True}))
    with pytest.raises(target_lib.TargetError, match="compute_capability"):
        target_lib.load_target(_write(tmp_path, {**good, "compute_capability": [8]}))
    # The runtime reads these as 32-bit ints; a bandwidth must be finite (the package's JSON).
    for key, value, needle in (("workers_per_sm", 10**20, r"workers_per_sm=100000000000000000000 must be a "
                                                         r"positive int \(32-bit\)"),
                               ("compute_capability", [10**20, 0], r"compute_capability=.* is beyond a 32-bit int"),
                               ("shared_memory_per_worker", 2**31, r"shared_memory_per_worker=2147483648 must be"),
                               ("bandwidth_gbps", float("inf"), r"bandwidth_gbps=inf must be a positive finite")):
        with pytest.raises(target_lib.TargetError, match=needle):
            target_lib.load_target(_write(tmp_path, {**good, key: value}))
    with pytest.raises(target_lib.TargetError, match="not valid JSON"):
        target_lib.load_target(_write(tmp_path, "{"))
    with pytest.raises(target_lib.TargetError, match="cannot read"):
        target_lib.load_target(str(tmp_path / "none.json"))
    with pytest.raises(target_lib.TargetError, match="shipped targets are"):
        target_lib.resolve_target("a100")
    assert target_lib.resolve_target(_write(tmp_path, good)) == target_lib.resolve_target(
        "rtx3050")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
