"""Independent numpy Llama decoder: the reference that tests compare everything else to.

Written from the math (Llama paper; HF `modeling_llama.py` conventions), deliberately not
from TileInfer's planner code; it takes a LlamaConfig and ModelWeights only as containers.
Its RoPE frequency table is computed here, not by `LlamaConfig.rope_inv_freq`, so the two
check each other.

Numerics (the runtime's documented semantics):
  * weights are BF16, upcast to float32 once; all math and activations are float32
    (or float64 with compute_dtype=np.float64: a more exact reference that calibrates how
    far two correct float32 implementations can drift apart);
  * RMSNorm:   y = x / sqrt(mean(x^2) + eps) * g
  * RoPE:      HF rotate-half: dims (i, i + hd/2) rotate by pos * inv_freq[i]; angles in
               float64, cos/sin cast to float32;
  * attention: causal, GQA (q head h uses kv head h // (nh/nkv)), scores q.k / sqrt(hd),
               softmax in float32 with the max subtracted;
  * K (after RoPE) and V are stored in the cache rounded to BF16, and attention reads
    them back from the cache, including the current position's;
  * FFN:       down(silu(gate(x)) * up(x)), silu(z) = z / (1 + exp(-z));
  * logits:    lm_head(rmsnorm(x) * final_norm), float32.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

BF16 = ml_dtypes.bfloat16


def inv_freq_table(head_dim: int, theta: float, scaling: dict | None) -> np.ndarray:
    """RoPE inverse frequencies (head_dim/2,) float64, written after Meta's llama3
    `apply_scaling` loop (llama-models reference), one frequency at a time."""
    freqs = [1.0 / (theta ** (2 * i / head_dim)) for i in range(head_dim // 2)]
    if scaling is None:
        return np.array(freqs, dtype=np.float64)
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "default":
        return np.array(freqs, dtype=np.float64)
    assert kind == "llama3", kind
    factor = scaling["factor"]
    low = scaling["low_freq_factor"]
    high = scaling["high_freq_factor"]
    old_ctx = scaling["original_max_position_embeddings"]
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < old_ctx / high:
            out.append(f)
        elif wavelen > old_ctx / low:
            out.append(f / factor)
        else:
            smooth = (old_ctx / wavelen - low) / (high - low)
            out.append((1 - smooth) * f / factor + smooth * f)
    return np.array(out, dtype=np.float64)


def _rms_norm(x: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    return (x / np.sqrt(np.mean(x * x) + eps) * g).astype(x.dtype)


def _silu(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # exp(-z) = inf for z < -88 gives the right limit, -0
        return z / (1 + np.exp(-z))


def _rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x: (heads, hd). Pairs (i, i + hd/2): [x1 c - x2 s, x2 c + x1 s]."""
    half = x.shape[-1] // 2
    x1, x2 = x[:, :half], x[:, half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


class NumpyLlama:
    """Batch-1 greedy decoder with a BF16 K/V cache.

    `last_attention[l]` holds layer l's per-head attention output (nh, hd) float32 of the
    last step (before Wo), for tests that look inside.
    """

    def __init__(self, config, weights, compute_dtype=np.float32):
        c = config
        self.dtype = np.dtype(compute_dtype)
        self.nh, self.nkv, self.hd = c.num_heads, c.num_kv_heads, c.head_dim
        self.eps = c.rms_norm_eps
        self.inv_freq = inv_freq_table(c.head_dim, c.rope_theta, c.rope_scaling)
        self.embed = self._upcast(weights.embed)
        self.final_norm = self._upcast(weights.final_norm)
        self.lm_head = self.embed if weights.lm_head is weights.embed else self._upcast(weights.lm_head)
        self.layers = []
        for lw in weights.layers:
            self.layers.append({name: self._upcast(getattr(lw, name)) for name in (
                "attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up", "w_down")})
        self.reset()

    def _upcast(self, a: np.ndarray) -> np.ndarray:
        return np.asarray(a).astype(self.dtype)

    def reset(self) -> None:
        """Forgets the context; the next step is position 0."""
        self.pos = 0
        self.k_cache = [np.zeros((0, self.nkv, self.hd), BF16) for _ in self.layers]
        self.v_cache = [np.zeros((0, self.nkv, self.hd), BF16) for _ in self.layers]
        self.last_attention = [None] * len(self.layers)

    def step(self, token_id: int) -> np.ndarray:
        """Feeds one token at position self.pos; returns logits (V,) float32; advances pos."""
        if not 0 <= token_id < self.embed.shape[0]:
            raise IndexError(f"token id {token_id} outside vocab {self.embed.shape[0]}")
        angle = self.pos * self.inv_freq
        cos, sin = np.cos(angle).astype(self.dtype), np.sin(angle).astype(self.dtype)
        group = self.nh // self.nkv
        x = self.embed[token_id].copy()
        for li, w in enumerate(self.layers):
            h = _rms_norm(x, w["attn_norm"], self.eps)
            q = _rotate((w["wq"] @ h).reshape(self.nh, self.hd), cos, sin)
            k = _rotate((w["wk"] @ h).reshape(self.nkv, self.hd), cos, sin)
            v = (w["wv"] @ h).reshape(self.nkv, self.hd)
            self.k_cache[li] = np.concatenate([self.k_cache[li], k.astype(BF16)[None]])
            self.v_cache[li] = np.concatenate([self.v_cache[li], v.astype(BF16)[None]])
            keys = self.k_cache[li].astype(self.dtype)    # (T, nkv, hd)
            values = self.v_cache[li].astype(self.dtype)  # (T, nkv, hd)
            out = np.empty((self.nh, self.hd), self.dtype)
            for head in range(self.nh):
                kv = head // group
                scores = (keys[:, kv, :] @ q[head]) / self.dtype.type(math.sqrt(self.hd))  # (T,)
                p = np.exp(scores - scores.max())
                p = p / p.sum()
                out[head] = p @ values[:, kv, :]
            self.last_attention[li] = out
            x = x + w["wo"] @ out.reshape(-1)
            h = _rms_norm(x, w["ffn_norm"], self.eps)
            gate = w["w_gate"] @ h
            up = w["w_up"] @ h
            x = x + w["w_down"] @ (_silu(gate) * up)
        self.pos += 1
        return (self.lm_head @ _rms_norm(x, self.final_norm, self.eps)).astype(np.float32)

    def greedy(self, prompt_ids: list[int], n: int, stop_ids=()) -> list[int]:
        """Resets, feeds `prompt_ids`, then generates up to n tokens by argmax (lowest id wins
        ties, as np.argmax does); stops early after emitting an id in `stop_ids`. The last
        generated token is returned but not fed, so self.pos = len(prompt) + len(out) - 1."""
        if not prompt_ids:
            raise ValueError("greedy needs at least one prompt token")
        self.reset()
        for t in prompt_ids:
            logits = self.step(int(t))
        out: list[int] = []
        for i in range(n):
            nxt = int(np.argmax(logits))
            out.append(nxt)
            if nxt in stop_ids or i == n - 1:
                break
            logits = self.step(nxt)
        return out
