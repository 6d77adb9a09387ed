"""The C++ CPU executor against the independent numpy reference (tests/reference).

Each model is imported, planned, packed and validated by the planner, then run by the C++
executor through the pybind11 module; the numpy reference runs the same checkpoint. Logits
must agree to a relative error max|a - b| / max|b| <= 1e-3 at every position, and greedy
tokens must be identical.
"""
import os
import sys

import numpy as np
import pytest

from host import _tileinfer
from planner import checkpoint as checkpoint_lib
from planner import main as planner_main
from tests.reference import numpy_llama
from tests.reference import tiny_models

TOLERANCE = 1e-3

SHAPES = {
    # name: (hidden, ffn, layers, heads, kv_heads, vocab, head_dim, tied)
    "gqa_9x3_odd_sizes": (72, 100, 2, 9, 3, 97, None, True),
    "mha_4x4_untied": (64, 96, 2, 4, 4, 61, None, False),
    "gqa_8x2_hd32": (128, 352, 3, 8, 2, 131, 32, True),
    "mqa_6x1_hd12": (72, 40, 1, 6, 1, 50, 12, False),
    # head_dim 128 with Llama 3.2 3B's and Llama 3.1 8B's heads a K/V head (3 and 4).
    "gqa_6x2_hd128": (192, 80, 2, 6, 2, 70, 128, True),
    "gqa_8x2_hd128_untied": (256, 96, 2, 8, 2, 60, 128, False),
}


def rel_error(got, want):
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def build(tmp_path, name, target="rtx3050", max_context=48, **plan_args):
    hidden, ffn, layers, heads, kv_heads, vocab, head_dim, tied = SHAPES[name]
    ckpt = tmp_path / name
    tiny_models.write_tiny_checkpoint(ckpt, hidden=hidden, ffn=ffn, layers=layers, heads=heads,
                                      kv_heads=kv_heads, vocab=vocab, head_dim=head_dim,
                                      tied=tied, seed=hash(name) % 1000)
    out = tmp_path / f"{name}.tpkg"
    planner_main.build_package(str(ckpt), target, str(out), max_context, progress=False,
                               **plan_args)
    return checkpoint_lib.load_checkpoint(str(ckpt)), str(out)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_logits_match_numpy_reference(tmp_path, name):
    ckpt, pkg = build(tmp_path, name)
    session = _tileinfer.CpuSession(pkg, threads=2)
    ref = numpy_llama.NumpyLlama(ckpt.config, ckpt.weights)
    rng = np.random.default_rng(7)
    prompt = [int(t) for t in rng.integers(0, ckpt.config.vocab_size, size=40)]
    worst = 0.0
    for pos, token in enumerate(prompt):
        session.step(token, pos, True)
        got = session.logits()
        want = ref.step(token)
        assert np.all(np.isfinite(got)), f"non-finite logits at position {pos}"
        worst = max(worst, rel_error(got, want))
        assert rel_error(got, want) <= TOLERANCE, f"position {pos}: {rel_error(got, want):.2e}"
        assert session.select() == int(np.argmax(want)) or np.sort(want)[-1] - np.sort(want)[-2] < 1e-4
    print(f"{name}: worst relative error {worst:.2e}")


@pytest.mark.parametrize("chunks,min_chunk", [(1, 1), (4, 1), (5, 3), (6, 128)])
def test_attention_chunking_does_not_change_logits(tmp_path, chunks, min_chunk):
    """Splitting the context into chunks (merged in ATTN_OUT) agrees with the reference."""
    ckpt, pkg = build(tmp_path, "gqa_9x3_odd_sizes", attention_chunks=chunks,
                      attention_min_chunk=min_chunk)
    session = _tileinfer.CpuSession(pkg, threads=2)
    ref = numpy_llama.NumpyLlama(ckpt.config, ckpt.weights)
    for pos in range(30):
        token = (pos * 37 + 5) % ckpt.config.vocab_size
        session.step(token, pos, True)
        assert rel_error(session.logits(), ref.step(token)) <= TOLERANCE, f"position {pos}"


@pytest.mark.parametrize("parts", [
    dict(qkv_parts=1, attn_out_parts=1, ffn_parts=1, lm_head_slots=1),
    dict(qkv_parts=7, attn_out_parts=3, ffn_parts=5, lm_head_slots=2),
    dict(qkv_parts=13, ffn_parts=19)])
def test_wave_parts_match_reference(tmp_path, parts):
    """Plans with fewer tasks in a wave than workers (the planner's --qkv_parts etc.) agree
    with the reference; splitting the QKV, ATTN_OUT and LM_HEAD rows differently leaves the
    logits bit-identical (each row is one dot product whatever its task), FFN parts only
    within tolerance (each part is rounded to fixed point before the sum)."""
    ckpt, pkg = build(tmp_path / "parts", "gqa_8x2_hd32", **parts)
    _, pkg_default = build(tmp_path / "default", "gqa_8x2_hd32")
    same_ffn = {k: v for k, v in parts.items() if k != "ffn_parts"}
    _, pkg_rows = build(tmp_path / "rows", "gqa_8x2_hd32", **same_ffn)
    sessions = [_tileinfer.CpuSession(p, threads=3) for p in (pkg, pkg_default, pkg_rows)]
    ref = numpy_llama.NumpyLlama(ckpt.config, ckpt.weights)
    for pos in range(24):
        token = (pos * 29 + 3) % ckpt.config.vocab_size
        for s in sessions:
            s.step(token, pos, True)
        got, default, rows = [s.logits() for s in sessions]
        want = ref.step(token)
        assert np.all(np.isfinite(got))
        assert rel_error(got, want) <= TOLERANCE, f"position {pos}: {rel_error(got, want):.2e}"
        assert rows.tobytes() == default.tobytes(), f"position {pos}: row splits changed the bits"
        assert sessions[0].select() == sessions[1].select() or \
            np.sort(want)[-1] - np.sort(want)[-2] < 1e-4


def test_greedy_tokens_match_for_32_steps(tmp_path):
    ckpt, pkg = build(tmp_path, "gqa_8x2_hd32")
    session = _tileinfer.CpuSession(pkg, threads=2)
    ref = numpy_llama.NumpyLlama(ckpt.config, ckpt.weights)
    prompt = [3, 14, 15, 92, 65]
    got = session.generate(prompt, 32, stop_at_eos=False)
    want = ref.greedy(prompt, 32)
    assert got == want


def test_h200_plan_runs_on_cpu(tmp_path):
    """A package planned for the 132-worker H200 decodes on the CPU like the 20-worker one."""
    ckpt, pkg_small = build(tmp_path / "a", "gqa_9x3_odd_sizes")
    _, pkg_big = build(tmp_path / "b", "gqa_9x3_odd_sizes", target="h200")
    a = _tileinfer.CpuSession(pkg_small, threads=2)
    b = _tileinfer.CpuSession(pkg_big, threads=2)
    for pos in range(10):
        a.step(pos + 1, pos, True)
        b.step(pos + 1, pos, True)
        assert rel_error(b.logits(), a.logits()) <= TOLERANCE


def test_thread_count_does_not_change_bits(tmp_path):
    """Tasks of a wave are independent: any number of threads gives the same bits."""
    _, pkg = build(tmp_path, "gqa_9x3_odd_sizes", target="h200")
    results = []
    for threads in (1, 3, 16):
        session = _tileinfer.CpuSession(pkg, threads=threads)
        for pos in range(6):
            session.step(pos + 2, pos, True)
        results.append(session.logits())
    assert np.all(np.isfinite(results[0]))
    for r in results[1:]:
        assert r.tobytes() == results[0].tobytes()


def test_a_step_without_logits_skips_the_lm_head(tmp_path):
    """step(..., logits=False) (a prompt position) does not run LM_HEAD: logits() still holds
    the last step with logits, bit for bit, and the next step with logits is the reference's."""
    ckpt, pkg = build(tmp_path, "gqa_9x3_odd_sizes")
    session = _tileinfer.CpuSession(pkg, threads=2)
    ref = numpy_llama.NumpyLlama(ckpt.config, ckpt.weights)
    session.step(5, 0, True)
    first = session.logits()
    ref.step(5)
    for pos, token in ((1, 11), (2, 17)):
        session.step(token, pos, False)
        ref.step(token)
        assert session.logits().tobytes() == first.tobytes(), f"position {pos}: LM_HEAD ran"
    session.step(23, 3, True)
    assert rel_error(session.logits(), ref.step(23)) <= TOLERANCE


@pytest.mark.parametrize("target, slots", [("h200", None), ("h200", 1), ("rtx3050", 7)])
def test_ties_select_the_lowest_id(tmp_path, target, slots):
    """lm_head rows come in equal pairs: every logit has a twin, and the lower id must win,
    whether the twins fall in different LM_HEAD tasks (h200: a row a task; the candidates'
    merge breaks the tie), in one task (one slot: the task's own scan does) or both (7 slots
    of 8-9 rows)."""
    ckpt = tmp_path / "ties"
    tiny_models.write_tiny_checkpoint(ckpt, hidden=64, ffn=96, layers=1, heads=4, kv_heads=2,
                                      vocab=60, tied=False, paired_lm_head_rows=True, seed=3)
    pkg = tmp_path / "ties.tpkg"
    planner_main.build_package(str(ckpt), target, str(pkg), 16, progress=False,
                               lm_head_slots=slots)
    session = _tileinfer.CpuSession(str(pkg), threads=2)
    for pos in range(8):
        session.step(pos * 7 % 60, pos, True)
        logits = session.logits()
        best = int(np.argmax(logits))  # numpy: the first (lowest) index of the maximum
        assert best % 2 == 0 and logits[best] == logits[best + 1]
        assert session.select() == best


def test_non_finite_logit_stops_the_request(tmp_path):
    """An inf weight in lm_head makes its logit non-finite: generation must stop with an
    error, never emit a token, and the executor must serve the next request."""
    ckpt = tmp_path / "inf"
    tiny_models.write_tiny_checkpoint(ckpt, hidden=64, ffn=96, layers=1, heads=4, kv_heads=2,
                                      vocab=60, tied=False, seed=4)
    tiny_models.poison_row(ckpt, "lm_head.weight", 17)
    pkg = tmp_path / "inf.tpkg"
    planner_main.build_package(str(ckpt), "h200", str(pkg), 16, progress=False)
    session = _tileinfer.CpuSession(str(pkg), threads=2)
    with pytest.raises(RuntimeError, match="non-finite logit"):
        session.generate([1, 2, 3], 4)
    session.step(1, 0, True)
    assert session.select() == -1  # kCandidateNonFinite, not a token id
    with pytest.raises(RuntimeError, match="non-finite logit"):
        session.generate([5], 2)


def test_residual_out_of_fixed_point_range_stops_the_request(tmp_path):
    """A residual value beyond the FIXED64 range (format_spec: |v| <= 2^21) cannot be kept
    exactly: the request must stop with the non-finite error rather than run on a clamped
    value, and a new request (position 0) must run again."""
    ckpt = tmp_path / "big"
    tiny_models.write_residual_overflow_checkpoint(ckpt)
    pkg = tmp_path / "big.tpkg"
    planner_main.build_package(str(ckpt), "h200", str(pkg), 16, progress=False)
    session = _tileinfer.CpuSession(str(pkg), threads=2)
    with pytest.raises(RuntimeError, match="non-finite logit at position 2"):
        session.generate([1, 2, 3], 4)  # token 2 at position 1 (no logits), caught at 2
    session.step(5, 0, True)  # a new request: the mark is cleared
    assert session.select() >= 0
    assert np.all(np.isfinite(session.logits()))
    session.step(2, 1, True)
    assert session.select() == -1
    # Position 0 again with its token clears the mark, so it must not keep the later rows,
    # which the clamped residual wrote: position 2 then skips position 1.
    session.step(3, 2, True)
    session.step(5, 0, True)
    with pytest.raises(RuntimeError, match="position 2 skips position 1,"):
        session.step(3, 2, True)


def test_step_rejects_bad_token_and_position(tmp_path):
    _, pkg = build(tmp_path, "mqa_6x1_hd12", max_context=8)
    session = _tileinfer.CpuSession(pkg, threads=1)
    for call in (session.logits, session.select):  # nothing to read yet: an error, not NaN or -1
        with pytest.raises(RuntimeError, match=r"no step with logits has run yet: call step\(token, pos\) first"):
            call()
    with pytest.raises(RuntimeError, match="outside the vocabulary"):
        session.step(10_000, 0, True)
    new = session.generate([1, 2], 3, False)  # generate's last step had logits: they are readable
    assert len(new) == 3 and session.select() == new[-1] and np.isfinite(session.logits()).all()
    with pytest.raises(RuntimeError, match="max context"):
        session.step(1, 8, True)
    with pytest.raises(RuntimeError, match="position -1 is negative"):
        session.step(1, -1, True)
    with pytest.raises(RuntimeError, match="exceeds the package's max context"):
        session.generate([1, 2, 3], 6)


def test_step_refuses_a_skipped_position(tmp_path):
    """A step reads the K/V rows of every earlier position: one that skips a position raises
    (it would attend over rows no step wrote); going back with another token rewrites the
    cache from there; going back with the same token keeps the rows after it, bit for bit;
    position 0 starts a new request."""
    _, pkg = build(tmp_path, "gqa_9x3_odd_sizes")
    session = _tileinfer.CpuSession(pkg, threads=2)
    with pytest.raises(RuntimeError, match=r"position 1 skips position 0, .*\(0 continues"):
        session.step(3, 1, True)
    session.step(3, 0, True)
    session.step(4, 1, True)
    with pytest.raises(RuntimeError, match=r"skips positions 2-4, .*\(2 continues; an earlier one goes back, and 0 "):
        session.step(5, 5, True)
    session.step(7, 1, True)  # back to 1: the same bits as a session that stepped 3, 7
    fresh = _tileinfer.CpuSession(pkg, threads=2)
    fresh.step(3, 0, True)
    fresh.step(7, 1, True)
    assert session.logits().tobytes() == fresh.logits().tobytes()
    new = session.generate([1, 2, 3], 4, stop_at_eos=False)  # steps positions 0-5
    assert len(new) == 4
    with pytest.raises(RuntimeError, match="position 7 skips position 6,"):
        session.step(new[-1], 7, True)
    session.step(new[-1], 6, True)
    # Positions re-run with the tokens they hold keep the rows after them (the same bits):
    # the benchmark's repeated windows; position 7 follows, as after a straight run.
    session.step(2, 1, True)
    session.step(3, 2, True)
    session.step(new[0], 7, True)
    straight = _tileinfer.CpuSession(pkg, threads=2)
    for pos, token in enumerate([1, 2, 3] + new + [new[0]]):
        straight.step(token, pos, True)
    assert session.logits().tobytes() == straight.logits().tobytes()
    session.step(1, 0, True)  # position 0 starts a new request, even with the same token
    with pytest.raises(RuntimeError, match="position 2 skips position 1,"):
        session.step(3, 2, True)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
