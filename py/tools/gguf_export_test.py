"""gguf_export: a checkpoint written as GGUF and read back by gguf_import is the same
checkpoint (every weight bit, the config, the tokenizer's ids)."""
import json
import sys

import gguf
import numpy as np
import pytest
import tokenizers

from planner.checkpoint import load_checkpoint
from tests.reference import tiny_models
from tools import gguf_export, gguf_import

LLAMA3_ROPE = {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
               "original_max_position_embeddings": 8192, "rope_type": "llama3"}


def weights_equal(a, b):
    pairs = [(a.embed, b.embed), (a.final_norm, b.final_norm), (a.lm_head, b.lm_head)]
    for la, lb in zip(a.layers, b.layers):
        pairs += [(getattr(la, f), getattr(lb, f)) for f in (
            "attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up", "w_down")]
    return all(x.shape == y.shape and np.array_equal(np.asarray(x).view(np.uint16),
                                                      np.asarray(y).view(np.uint16)) for x, y in pairs)


@pytest.mark.parametrize("tied,rope", [(True, None), (False, LLAMA3_ROPE)])
def test_round_trip_through_gguf_import(tmp_path, tied, rope):
    src = tmp_path / "src"
    tiny_models.write_tiny_checkpoint(src, seed=3, hidden=64, ffn=96, layers=2, heads=4, kv_heads=2,
                                      vocab=300, tied=tied, rope_scaling=rope)
    out = gguf_export.export_gguf(src, tmp_path / "m.gguf")
    reader = gguf.GGUFReader(out)
    types = {t.name: t.tensor_type for t in reader.tensors}
    assert types["blk.0.attn_q.weight"] == gguf.GGMLQuantizationType.BF16
    assert types["blk.0.attn_norm.weight"] == gguf.GGMLQuantizationType.F32
    assert ("output.weight" in types) == (not tied)
    back = gguf_import.import_gguf(out, tmp_path / "back")
    a, b = load_checkpoint(str(src)), load_checkpoint(str(back))
    assert weights_equal(a.weights, b.weights)  # Q/K permuted and unpermuted: the same bits
    for field in ("hidden_size", "intermediate_size", "num_layers", "num_heads", "num_kv_heads",
                  "head_dim", "vocab_size", "rms_norm_eps", "rope_theta", "bos_token_id"):
        assert getattr(a.config, field) == getattr(b.config, field), field
    assert a.config.rope_scaling == b.config.rope_scaling
    assert np.allclose(a.config.rope_inv_freq(), b.config.rope_inv_freq(), rtol=1e-6)
    text = "the cat sat on the mat, 12345 times!"
    ids = lambda d: tokenizers.Tokenizer.from_file(str(d / "tokenizer.json")).encode(text).ids  # noqa: E731
    assert ids(src) == ids(back) and len(ids(src)) > 5


def test_unknown_pre_tokenizer_is_refused(tmp_path):
    src = tmp_path / "src"
    tiny_models.write_tiny_checkpoint(src, seed=3, hidden=64, ffn=96, layers=1, heads=4, kv_heads=2, vocab=300)
    tok = json.loads((src / "tokenizer.json").read_text())
    tok["pre_tokenizer"] = {"type": "Whitespace"}
    (src / "tokenizer.json").write_text(json.dumps(tok))
    with pytest.raises(gguf_export.ExportError, match="no llama.cpp name"):
        gguf_export.export_gguf(src, tmp_path / "m.gguf")
    assert not list(tmp_path.glob("*.gguf")) and not list(tmp_path.glob(".m.gguf.tmp-*"))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
