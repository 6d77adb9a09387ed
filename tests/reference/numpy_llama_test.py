"""Tests for the numpy reference decoder: RoPE table, GQA mapping, hand-computed cases."""

import math
import sys


import ml_dtypes
import numpy as np
import pytest

from planner.checkpoint import load_checkpoint
from planner.model_config import LlamaConfig
from planner.weights import LayerWeights, ModelWeights
from tests.reference.numpy_llama import NumpyLlama, inv_freq_table
from tests.reference.tiny_models import write_tiny_checkpoint

BF16 = ml_dtypes.bfloat16


def make_config(**kw):
    base = dict(hidden_size=8, intermediate_size=12, num_layers=1, num_heads=2, num_kv_heads=1,
                head_dim=4, vocab_size=16, rms_norm_eps=1e-5, rope_theta=10000.0,
                rope_scaling=None, tie_word_embeddings=True, max_position_embeddings=64,
                bos_token_id=1, eos_token_ids=(2,))
    base.update(kw)
    return LlamaConfig(**base)


@pytest.mark.parametrize("head_dim, theta, scaling", [
    (64, 500000.0, {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
    (128, 500000.0, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
    (64, 100000.0, None),
    (8, 10000.0, None),
])
def test_rope_table_equals_config_rope_inv_freq(head_dim, theta, scaling):
    cfg = make_config(head_dim=head_dim, hidden_size=2 * head_dim, rope_theta=theta,
                      rope_scaling=scaling)
    ours = inv_freq_table(head_dim, theta, cfg.rope_scaling)
    theirs = cfg.rope_inv_freq()
    assert ours.shape == theirs.shape == (head_dim // 2,)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    if scaling:  # scaled and unscaled tables must differ, or the comparison proves nothing
        assert not np.allclose(ours, inv_freq_table(head_dim, theta, None))


@pytest.fixture(scope="module")
def gqa_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("gqa")
    write_tiny_checkpoint(d, hidden=72, ffn=96, layers=1, heads=9, kv_heads=3, head_dim=8,
                          vocab=300, seed=3)
    return load_checkpoint(str(d))


@pytest.mark.parametrize("which", ["wk", "wv", "both"])
def test_gqa_kv_head_1_feeds_only_q_heads_3_to_5(gqa_model, which):
    cfg, w = gqa_model.config, gqa_model.weights
    assert cfg.num_heads == 9 and cfg.num_kv_heads == 3
    hd = cfg.head_dim
    layer = w.layers[0]
    rng = np.random.default_rng(7)
    changed = {}
    for name in (["wk", "wv"] if which == "both" else [which]):
        m = getattr(layer, name).astype(np.float32)
        m[1 * hd:2 * hd] += rng.normal(0, 0.5, m[hd:2 * hd].shape)  # rows of KV head 1 only
        changed[name] = m.astype(BF16)
    w2 = ModelWeights(embed=w.embed, final_norm=w.final_norm, lm_head=w.lm_head,
                      layers=[LayerWeights(**{**layer.__dict__, **changed})])
    a, b = NumpyLlama(cfg, w), NumpyLlama(cfg, w2)
    expect = {q for q in range(9) if cfg.kv_head_for(q) == 1}
    assert expect == {3, 4, 5}
    for pos, tok in enumerate([5, 17, 42, 99]):
        a.step(tok)
        b.step(tok)
        diff = np.abs(a.last_attention[0] - b.last_attention[0]).max(axis=1)
        moved = {h for h in range(9) if diff[h] > 0}
        if which == "wk" and pos == 0:
            # One key: softmax is exactly 1 whatever the key, so K changes nothing yet.
            assert moved == set()
        else:
            assert moved == expect, (pos, diff)


def test_hand_computed_one_layer_position_0():
    """H=2, one head of dim 2, F=1, V=2: every number below can be checked on paper."""
    eps = 1e-2
    cfg = make_config(hidden_size=2, intermediate_size=1, num_heads=1, num_kv_heads=1,
                      head_dim=2, vocab_size=3, rms_norm_eps=eps)
    f = lambda rows: np.array(rows, np.float32).astype(BF16)
    embed = f([[1, -1], [0.5, 2], [0, 0.25]])
    layer = LayerWeights(attn_norm=f([1, 1]), wq=f([[1, 2], [3, 4]]), wk=f([[1, 0], [0, 1]]),
                         wv=f([[2, 0], [0, 1]]), wo=f([[1, 0], [0, 1]]), ffn_norm=f([1, 1]),
                         w_gate=f([[1, 0]]), w_up=f([[0, 1]]), w_down=f([[1], [1]]))
    weights = ModelWeights(embed=embed, layers=[layer], final_norm=f([1, 1]), lm_head=embed)
    logits = NumpyLlama(cfg, weights).step(0)

    x = [1.0, -1.0]
    s = math.sqrt(1 + eps)                       # mean(x^2) = 1
    v = [2 / s, -1 / s]                          # Wv @ rmsnorm(x)
    # One position: softmax = [1], so attention returns V as read back from the bf16 cache:
    # 2/s = 1.99007 -> 255 * 2^-7 = 1.9921875 ; -1/s = -0.99504 -> -255 * 2^-8 = -0.99609375.
    attn = [float(np.float32(t).astype(BF16)) for t in v]
    assert attn == [1.9921875, -0.99609375]
    x = [x[0] + attn[0], x[1] + attn[1]]         # Wo = I
    r = math.sqrt((x[0] ** 2 + x[1] ** 2) / 2 + eps)
    g, u = x[0] / r, x[1] / r                    # gate = n2[0], up = n2[1]
    h = g / (1 + math.exp(-g)) * u               # silu(g) * u
    x = [x[0] + h, x[1] + h]                     # W_down = [[1], [1]]
    r = math.sqrt((x[0] ** 2 + x[1] ** 2) / 2 + eps)
    n = [x[0] / r, x[1] / r]
    expected = [n[0] * 1 - n[1] * 1, n[0] * 0.5 + n[1] * 2, n[1] * 0.25]
    np.testing.assert_allclose(logits, expected, rtol=2e-6)


def scalar_reference(cfg, w, tokens):
    """The decoder again, one scalar at a time in float64 (only K/V rounded to bf16)."""
    def mat(a):
        return a.astype(np.float32).astype(np.float64).tolist()

    def matvec(m, x):
        return [sum(mi * xi for mi, xi in zip(row, x)) for row in m]

    def rms(x, g):
        r = math.sqrt(sum(t * t for t in x) / len(x) + cfg.rms_norm_eps)
        return [t / r * gi for t, gi in zip(x, g)]

    def bf16(t):
        return float(np.float32(t).astype(BF16))

    hd, nh, nkv = cfg.head_dim, cfg.num_heads, cfg.num_kv_heads
    freqs = [cfg.rope_theta ** (-2 * i / hd) for i in range(hd // 2)]

    def rope(vec, pos):
        out = list(vec)
        for i in range(hd // 2):
            c, s = math.cos(pos * freqs[i]), math.sin(pos * freqs[i])
            a, b = vec[i], vec[i + hd // 2]
            out[i], out[i + hd // 2] = a * c - b * s, b * c + a * s
        return out

    embed, lm_head = mat(w.embed), mat(w.lm_head)
    layers = [{k: mat(v) for k, v in lw.__dict__.items()} for lw in w.layers]
    caches = [([], []) for _ in layers]
    all_logits = []
    for pos, tok in enumerate(tokens):
        x = list(embed[tok])
        for lw, (kc, vc) in zip(layers, caches):
            h = rms(x, lw["attn_norm"])
            q, k, v = matvec(lw["wq"], h), matvec(lw["wk"], h), matvec(lw["wv"], h)
            kc.append([bf16(t) for j in range(nkv) for t in rope(k[j * hd:(j + 1) * hd], pos)])
            vc.append([bf16(t) for t in v])
            att = []
            for head in range(nh):
                kv = head // (nh // nkv)
                qh = rope(q[head * hd:(head + 1) * hd], pos)
                scores = [sum(a * b for a, b in zip(qh, kr[kv * hd:(kv + 1) * hd])) / math.sqrt(hd)
                          for kr in kc]
                m = max(scores)
                e = [math.exp(sc - m) for sc in scores]
                att += [sum(e[t] * vc[t][kv * hd + d] for t in range(len(kc))) / sum(e)
                        for d in range(hd)]
            x = [a + b for a, b in zip(x, matvec(lw["wo"], att))]
            h = rms(x, lw["ffn_norm"])
            g, u = matvec(lw["w_gate"], h), matvec(lw["w_up"], h)
            x = [a + b for a, b in zip(x, matvec(lw["w_down"],
                                                 [gi / (1 + math.exp(-gi)) * ui
                                                  for gi, ui in zip(g, u)]))]
        all_logits.append(matvec(lm_head, rms(x, mat(w.final_norm))))
    return all_logits


@pytest.mark.parametrize("tied", [True, False])
def test_matches_scalar_reference_over_positions(tmp_path, tied):
    write_tiny_checkpoint(tmp_path, hidden=16, ffn=24, layers=2, heads=4, kv_heads=2,
                          vocab=40, tied=tied, rope_theta=100.0, seed=11)
    ck = load_checkpoint(str(tmp_path))
    tokens = [3, 9, 27, 9, 1]
    expected = scalar_reference(ck.config, ck.weights, tokens)
    model = NumpyLlama(ck.config, ck.weights)
    for pos, tok in enumerate(tokens):
        got = model.step(tok)
        assert got.dtype == np.float32 and got.shape == (40,)
        assert np.std(expected[pos]) > 0.1  # not a degenerate all-equal case
        np.testing.assert_allclose(got, expected[pos], rtol=1e-4, atol=1e-4, err_msg=f"pos {pos}")
    # The cache really is bf16 and one entry per position.
    assert model.k_cache[0].dtype == BF16 and model.k_cache[1].shape == (5, 2, 4)


def test_reset_and_greedy(tmp_path):
    write_tiny_checkpoint(tmp_path, hidden=16, ffn=24, layers=2, heads=4, kv_heads=2, vocab=40,
                          seed=5)
    ck = load_checkpoint(str(tmp_path))
    m = NumpyLlama(ck.config, ck.weights)
    first = m.step(7)
    m.step(8)
    m.reset()
    assert m.pos == 0
    np.testing.assert_array_equal(m.step(7), first)
    out = m.greedy([7, 8], 6)
    assert len(out) == 6 and m.pos == 2 + 5
    # Greedy is argmax fed back: replay it step by step.
    m.reset()
    m.step(7)
    logits = m.step(8)
    for t in out:
        assert t == int(np.argmax(logits))
        logits = m.step(t)
    stop = out[3]
    assert m.greedy([7, 8], 6, stop_ids={stop}) == out[:out.index(stop) + 1]


def test_greedy_ties_go_to_the_lowest_id(tmp_path):
    write_tiny_checkpoint(tmp_path, hidden=16, ffn=24, layers=1, heads=4, kv_heads=2, vocab=40,
                          tied=False, seed=2)
    ck = load_checkpoint(str(tmp_path))
    r = np.random.default_rng(0).normal(size=16).astype(np.float32)
    head = np.tile(-r, (40, 1))
    head[[9, 5, 30]] = r  # three identical best rows (if r.n > 0) or 37 identical (if < 0)
    ck.weights.lm_head = head.astype(BF16)
    m = NumpyLlama(ck.config, ck.weights)
    logits = m.step(4)
    best = np.flatnonzero(logits == logits.max())
    assert len(best) >= 3
    assert m.greedy([4], 1) == [int(best.min())]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
