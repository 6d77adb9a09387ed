"""Tests for planner.checkpoint: head variants, dtype conversion, shards, errors, hub ids."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from planner import checkpoint as checkpoint_lib
from planner import weights as weights_lib
from planner.checkpoint import CheckpointError, load_checkpoint
from tests.reference.tiny_models import write_tiny_checkpoint

BF16 = np.dtype(ml_dtypes.bfloat16)
TINY = dict(hidden=32, ffn=48, layers=2, heads=4, kv_heads=2, vocab=300)
REPO = pathlib.Path(__file__).resolve().parents[2]


def bits(a: np.ndarray) -> np.ndarray:
    """Bit pattern of a bf16 array, so comparisons are exact (and NaN-safe)."""
    assert a.dtype == BF16
    return a.view(np.uint16)


def assert_matches_written(ck, written):
    """Every loaded tensor equals what was written, converted to bf16 by ml_dtypes."""
    n = 0
    for name, array, shape in weights_lib.named_tensors(ck.weights, ck.config):
        assert array.shape == shape and array.dtype == BF16, name
        np.testing.assert_array_equal(bits(array), bits(written[name].astype(BF16)), err_msg=name)
        n += 1
    assert n == 1 + 9 * TINY["layers"] + 1 + (0 if ck.weights.tied else 1)


def rewrite(path: pathlib.Path, edit):
    tensors = load_file(str(path))
    edit(tensors)
    save_file(tensors, str(path), metadata={"format": "pt"})


def test_tied_without_lm_head(tmp_path):
    written = write_tiny_checkpoint(tmp_path, **TINY, tied=True)
    assert "lm_head.weight" not in written
    ck = load_checkpoint(str(tmp_path))
    assert ck.config.tie_word_embeddings and ck.weights.tied
    assert ck.weights.lm_head is ck.weights.embed
    assert_matches_written(ck, written)
    assert ck.tokenizer_dir == tmp_path.resolve()
    assert "local directory" in ck.source_description


def test_tied_with_duplicate_lm_head(tmp_path, monkeypatch):
    warnings = []
    monkeypatch.setattr(checkpoint_lib.logging, "warning", lambda *a: warnings.append(a))
    written = write_tiny_checkpoint(tmp_path, **TINY, tied=True, duplicate_lm_head=True)
    assert "lm_head.weight" in written
    ck = load_checkpoint(str(tmp_path))
    assert ck.weights.lm_head is ck.weights.embed
    assert_matches_written(ck, written)
    assert not warnings

    # A duplicate that differs: the config (tied) wins, and we are told.
    rewrite(tmp_path / "model.safetensors",
            lambda t: t.__setitem__("lm_head.weight", (t["lm_head.weight"].astype(np.float32)
                                                       * 2).astype(BF16)))
    ck = load_checkpoint(str(tmp_path))
    assert ck.weights.lm_head is ck.weights.embed
    np.testing.assert_array_equal(bits(ck.weights.embed),
                                  bits(written["model.embed_tokens.weight"]))
    assert len(warnings) == 1 and "differs" in warnings[0][0]


def test_untied_uses_its_own_lm_head(tmp_path):
    written = write_tiny_checkpoint(tmp_path, **TINY, tied=False)
    ck = load_checkpoint(str(tmp_path))
    assert not ck.config.tie_word_embeddings and not ck.weights.tied
    head, embed = written["lm_head.weight"], written["model.embed_tokens.weight"]
    assert head.shape == embed.shape and not np.array_equal(head, embed)
    np.testing.assert_array_equal(bits(ck.weights.lm_head), bits(head))
    assert_matches_written(ck, written)


def test_untied_without_lm_head_is_an_error(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY, tied=False)
    rewrite(tmp_path / "model.safetensors", lambda t: t.pop("lm_head.weight"))
    with pytest.raises(CheckpointError, match=r"lm_head\.weight.*missing"):
        load_checkpoint(str(tmp_path))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_conversion_to_bf16_matches_ml_dtypes(tmp_path, dtype):
    written = write_tiny_checkpoint(tmp_path, **TINY, dtype=dtype, tied=False)
    some = written["model.layers.0.mlp.up_proj.weight"]
    assert some.dtype == np.dtype(dtype)
    # The conversion is not trivial: most values are not representable in bf16.
    assert np.mean(some.astype(BF16).astype(np.float32) != some.astype(np.float32)) > 0.5
    ck = load_checkpoint(str(tmp_path))
    assert_matches_written(ck, written)


def test_float32_rounds_to_nearest_even(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY, dtype="float32")
    u = 2.0 ** -8  # half a bf16 ulp at 1.0
    values = np.array([1 + u, 1 + 3 * u, 1 + 1.5 * u, -(1 + 3 * u), 1 + u / 2], np.float32)
    # Ties go to the even mantissa; above half goes up; below half goes down.
    expected = np.array([1.0, 1 + 4 * u, 1 + 2 * u, -(1 + 4 * u), 1.0], np.float32)
    norm = np.ones(TINY["hidden"], np.float32)
    norm[:5] = values
    rewrite(tmp_path / "model.safetensors", lambda t: t.__setitem__("model.norm.weight", norm))
    got = load_checkpoint(str(tmp_path)).weights.final_norm.astype(np.float32)
    np.testing.assert_array_equal(got[:5], expected)


def test_sharded_index(tmp_path):
    written = write_tiny_checkpoint(tmp_path, **TINY, tied=False, sharded=True)
    shards = sorted(p.name for p in tmp_path.glob("model-*.safetensors"))
    assert len(shards) == 3 and not (tmp_path / "model.safetensors").exists()
    ck = load_checkpoint(str(tmp_path))
    assert_matches_written(ck, written)
    assert "3 safetensors file(s)" in ck.source_description


def test_a_single_file_beside_an_index_is_read_as_transformers_reads_it(tmp_path, caplog):
    """transformers loads model.safetensors before model.safetensors.index.json: so does the
    planner, with a warning, where the two hold different weights."""
    sharded = write_tiny_checkpoint(tmp_path / "a", **TINY, tied=False, sharded=True)
    single = write_tiny_checkpoint(tmp_path / "b", **TINY, tied=False, seed=11)
    shutil.copy(tmp_path / "b" / "model.safetensors", tmp_path / "a" / "model.safetensors")
    ck = load_checkpoint(str(tmp_path / "a"))
    assert_matches_written(ck, single)
    with pytest.raises(AssertionError):
        assert_matches_written(ck, sharded)
    assert "holds both model.safetensors and model.safetensors.index.json" in caplog.text


def test_missing_shard_names_the_file(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY, sharded=True)
    (tmp_path / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"model-00002-of-00003\.safetensors: shard named in "
                       r"model\.safetensors\.index\.json is missing \(it holds \d+ tensors"):
        load_checkpoint(str(tmp_path))


def test_an_index_without_a_weight_map(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY, sharded=True)
    for weight_map in ({}, [], None):
        (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
        with pytest.raises(CheckpointError, match=r"index\.json: no 'weight_map' object"):
            load_checkpoint(str(tmp_path))


def test_index_names_a_tensor_the_shard_lacks(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY, sharded=True)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    name = "model.layers.1.mlp.down_proj.weight"
    rewrite(tmp_path / index["weight_map"][name], lambda t: t.pop(name))
    with pytest.raises(CheckpointError, match=rf"{index['weight_map'][name]}.*{name}"):
        load_checkpoint(str(tmp_path))


def test_a_shard_name_that_is_not_a_string(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY, sharded=True)
    path = tmp_path / "model.safetensors.index.json"
    index = json.loads(path.read_text())
    index["weight_map"]["model.norm.weight"] = 5
    path.write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"weight_map gives 'model\.norm\.weight' the shard 5, not a file name"):
        load_checkpoint(str(tmp_path))


def test_a_shard_holding_a_tensor_its_index_does_not_name(tmp_path):
    """A bias in a shard but not in the index: refused as in a single file, not left out."""
    write_tiny_checkpoint(tmp_path, **TINY, sharded=True)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    shard = index["weight_map"]["model.layers.0.mlp.gate_proj.weight"]
    rewrite(tmp_path / shard, lambda t: t.__setitem__("model.layers.0.mlp.gate_proj.bias",
                                                      np.ones(TINY["ffn"], np.float32)))
    with pytest.raises(CheckpointError, match=rf"{shard}: unexpected tensor\(s\) model\.layers\.0\.mlp\.gate_proj\.bias"):
        load_checkpoint(str(tmp_path))


def test_missing_tensor_names_the_tensor(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY)
    rewrite(tmp_path / "model.safetensors", lambda t: t.pop("model.layers.1.mlp.up_proj.weight"))
    with pytest.raises(CheckpointError, match=r"model\.layers\.1\.mlp\.up_proj\.weight.*missing"):
        load_checkpoint(str(tmp_path))


def test_wrong_shape_names_tensor_and_shapes(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY)
    name = "model.layers.0.self_attn.k_proj.weight"  # (kv_heads*hd, H) = (16, 32)
    rewrite(tmp_path / "model.safetensors",
            lambda t: t.__setitem__(name, np.zeros((32, 32), BF16)))
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(str(tmp_path))
    msg = str(e.value)
    assert "model.safetensors" in msg and name in msg and "(32, 32)" in msg and "(16, 32)" in msg


def test_unsupported_dtype_names_tensor_and_dtype(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY)
    name = "model.layers.1.self_attn.o_proj.weight"
    rewrite(tmp_path / "model.safetensors",
            lambda t: t.__setitem__(name, np.ones(t[name].shape, np.int8)))
    with pytest.raises(CheckpointError, match=rf"model\.safetensors.*{name}.*I8"):
        load_checkpoint(str(tmp_path))


def test_not_llama(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg.update(architectures=["MistralForCausalLM"], model_type="mistral")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match=r"config\.json.*MistralForCausalLM"):
        load_checkpoint(str(tmp_path))


def test_unexpected_tensor_refused_and_inv_freq_ignored(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY)
    rewrite(tmp_path / "model.safetensors", lambda t: t.__setitem__(
        "model.layers.0.self_attn.rotary_emb.inv_freq", np.ones(4, np.float32)))
    load_checkpoint(str(tmp_path))  # an old export's RoPE buffer: ignored
    rewrite(tmp_path / "model.safetensors", lambda t: t.__setitem__(
        "model.layers.0.self_attn.q_proj.bias", np.ones(32, BF16)))
    with pytest.raises(CheckpointError, match=r"unexpected tensor.*q_proj\.bias"):
        load_checkpoint(str(tmp_path))


def test_a_config_error_names_the_file_once(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY)
    config = json.loads((tmp_path / "config.json").read_text())
    config["hidden_act"] = "gelu"
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(str(tmp_path))
    assert str(e.value) == f"{tmp_path / 'config.json'}: hidden_act='gelu'; only 'silu' (or 'swish', the same function: SwiGLU) is supported"


def test_config_json_must_hold_an_object(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY)
    (tmp_path / "config.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match=r"config\.json: expected a JSON object, got list"):
        load_checkpoint(str(tmp_path))


def test_missing_config_and_weights(tmp_path):
    with pytest.raises(CheckpointError,
                       match=r"config\.json: not found; an HF checkpoint directory needs it"):
        load_checkpoint(str(tmp_path))
    write_tiny_checkpoint(tmp_path, **TINY)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_checkpoint(str(tmp_path))
    with pytest.raises(CheckpointError, match="no such directory"):
        load_checkpoint(str(tmp_path / "nope" / "deeper"))


def test_hub_id_needs_pinned_revision():
    # Also what a mistyped local path of the form a/b gets: it says both readings.
    with pytest.raises(CheckpointError, match="not a directory here, and as a hub id it needs a pinned revision"):
        load_checkpoint("HuggingFaceTB/SmolLM2-135M")
    with pytest.raises(CheckpointError, match="pinned revision"):
        load_checkpoint("HuggingFaceTB/SmolLM2-135M", revision="main")


def test_hub_id_resolves_through_snapshot_download(tmp_path, monkeypatch):
    written = write_tiny_checkpoint(tmp_path, **TINY)
    import huggingface_hub
    calls = []

    def fake_snapshot_download(repo_id, revision, **kw):
        calls.append((repo_id, revision))
        return str(tmp_path)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    sha = "0123456789abcdef0123456789abcdef01234567"
    ck = load_checkpoint("org/tiny", revision=sha)
    assert calls == [("org/tiny", sha)]
    assert ck.source_description.startswith(f"hub org/tiny@{sha}")
    assert_matches_written(ck, written)


def test_hub_id_offline_gives_a_clear_error(tmp_path):
    # HF_HUB_OFFLINE is read when huggingface_hub is imported, so run in a fresh process.
    code = ("from planner.checkpoint import load_checkpoint, CheckpointError\n"
            "try:\n"
            "  load_checkpoint('HuggingFaceTB/SmolLM2-135M', revision='a' * 40)\n"
            "except CheckpointError as e:\n"
            "  print('ERROR:', e)\n")
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"),
               PYTHONPATH=f"{REPO / 'py'}{os.pathsep}{REPO}")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ERROR:"), out.stdout + out.stderr
    assert "cannot be reached" in out.stdout and "pass the local directory" in out.stdout


def test_gguf_file_gets_a_hint(tmp_path):
    f = tmp_path / "model.gguf"
    f.write_bytes(b"GGUF")
    with pytest.raises(CheckpointError, match="gguf_import"):
        load_checkpoint(str(f))


def test_check_shapes_rejects_wrong_dtype_and_tying(tmp_path):
    write_tiny_checkpoint(tmp_path, **TINY)
    ck = load_checkpoint(str(tmp_path))
    weights_lib.check_shapes(ck.weights, ck.config)
    ck.weights.layers[1].w_up = ck.weights.layers[1].w_up.astype(np.float32)
    with pytest.raises(CheckpointError, match=r"model\.layers\.1\.mlp\.up_proj\.weight.*float32"):
        weights_lib.check_shapes(ck.weights, ck.config)
    ck.weights.layers[1].w_up = ck.weights.layers[1].w_up.astype(BF16)
    ck.weights.lm_head = ck.weights.embed.copy()
    with pytest.raises(CheckpointError, match="tie_word_embeddings"):
        weights_lib.check_shapes(ck.weights, ck.config)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
