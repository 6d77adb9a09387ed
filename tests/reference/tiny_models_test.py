"""write_tiny_checkpoint's parallel draw (the GPU machine's big random checkpoints)."""
import numpy as np
import pytest

from tests.reference import tiny_models

SHAPE = dict(hidden=256, ffn=512, layers=2, heads=4, kv_heads=2, vocab=300, tied=False)


def test_parallel_draw_repeats_and_keeps_the_layout(tmp_path):
    a = tiny_models.write_tiny_checkpoint(tmp_path / "a", parallel=True, seed=3, **SHAPE)
    b = tiny_models.write_tiny_checkpoint(tmp_path / "b", parallel=True, seed=3, **SHAPE)
    c = tiny_models.write_tiny_checkpoint(tmp_path / "c", parallel=True, seed=4, **SHAPE)
    d = tiny_models.write_tiny_checkpoint(tmp_path / "d", seed=3, **SHAPE)  # the sequential draw
    assert list(a) == list(d)  # names, in the same order
    for k in d:
        assert (a[k].shape, a[k].dtype) == (d[k].shape, d[k].dtype), k
        assert np.array_equal(a[k].view(np.uint16), b[k].view(np.uint16)), k  # same seed: same bits
    for k in ("model.embed_tokens.weight", "lm_head.weight", "model.layers.1.mlp.up_proj.weight"):
        assert not np.array_equal(a[k].view(np.uint16), c[k].view(np.uint16)), k  # another seed
        assert not np.array_equal(a[k].view(np.uint16), d[k].view(np.uint16)), k  # not the sequential values
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


@pytest.mark.parametrize("name, mean, std", [
    ("model.embed_tokens.weight", 0.0, 1.0),
    ("model.layers.0.self_attn.q_proj.weight", 0.0, 1 / 16),   # N(0, 1 / in), in = hidden 256
    ("model.layers.1.mlp.down_proj.weight", 0.0, 1 / 512 ** 0.5),  # in = ffn 512
    ("lm_head.weight", 0.0, 1 / 16),
])
def test_parallel_draw_has_the_sequential_distributions(tmp_path, name, mean, std):
    w = tiny_models.write_tiny_checkpoint(tmp_path, parallel=True, **SHAPE)[name].astype(np.float64)
    assert abs(w.mean() - mean) < 5 * std / np.sqrt(w.size)
    assert w.std() == pytest.approx(std, rel=0.03)


def test_parallel_norm_scales_are_near_one(tmp_path):
    t = tiny_models.write_tiny_checkpoint(tmp_path, parallel=True, **dict(SHAPE, hidden=4096))
    g = np.concatenate([t[k].astype(np.float64) for k in t if k.endswith("norm.weight")])
    assert g.mean() == pytest.approx(1.0, abs=0.01) and g.std() == pytest.approx(0.1, rel=0.05)
