"""Tests for planner.model_config: HF parsing, refusals, llama3 RoPE trap values, GQA."""

import copy
import json
import sys


import numpy as np
import pytest

from planner.model_config import ConfigError, LlamaConfig

# meta-llama/Llama-3.2-1B-Instruct config.json and generation_config.json, verbatim.
LLAMA_32_1B = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": False,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
    "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0.dev0", "use_cache": True, "vocab_size": 128256,
}
LLAMA_32_1B_GEN = {"bos_token_id": 128000, "do_sample": True,
                   "eos_token_id": [128001, 128008, 128009], "temperature": 0.6, "top_p": 0.9,
                   "transformers_version": "4.45.0.dev0"}
# HuggingFaceTB/SmolLM2-135M-Instruct config.json (abridged to the keys that matter).
SMOLLM2 = {
    "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 576, "intermediate_size": 1536,
    "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 9,
    "num_hidden_layers": 30, "num_key_value_heads": 3, "rms_norm_eps": 1e-05,
    "rope_scaling": None, "rope_theta": 100000, "tie_word_embeddings": True,
    "vocab_size": 49152,
}


def with_changes(base, **changes):
    d = copy.deepcopy(base)
    for k, v in changes.items():
        if v is ...:
            d.pop(k, None)
        else:
            d[k] = v
    return d


def test_llama_32_1b_loads():
    c = LlamaConfig.from_hf(LLAMA_32_1B, LLAMA_32_1B_GEN)
    assert (c.hidden_size, c.intermediate_size, c.num_layers) == (2048, 8192, 16)
    assert (c.num_heads, c.num_kv_heads, c.head_dim, c.vocab_size) == (32, 8, 64, 128256)
    assert c.rope_theta == 500000.0 and c.rms_norm_eps == 1e-5
    assert c.tie_word_embeddings is True and c.max_position_embeddings == 131072
    assert c.bos_token_id == 128000 and c.eos_token_ids == (128001, 128008, 128009)
    assert c.rope_scaling == {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                              "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}


def test_rope_llama3_trap_values():
    f = LlamaConfig.from_hf(LLAMA_32_1B, LLAMA_32_1B_GEN).rope_inv_freq()
    assert f.dtype == np.float64 and f.shape == (32,)
    base = 500000.0 ** (-np.arange(0, 64, 2) / 64)
    # Pairs 0-14: high frequency, kept as trained.
    np.testing.assert_allclose(f[:15], base[:15], rtol=1e-12)
    np.testing.assert_allclose(f[14], 3.211446e-3, rtol=1e-6)
    # Pairs 15-17: the smoothing band; the values a wrong formula most often gets wrong.
    np.testing.assert_allclose(f[15:18], [1.290548e-3, 4.295568e-4, 9.708288e-5], rtol=1e-6)
    # Pairs 18-31: low frequency, interpolated by factor 32.
    np.testing.assert_allclose(f[18:], base[18:] / 32, rtol=1e-12)
    np.testing.assert_allclose(f[31], 9.418307e-8, rtol=1e-6)
    # The band must actually be blended, not snapped to either side.
    assert np.all(f[15:18] < base[15:18]) and np.all(f[15:18] > base[15:18] / 32)


def test_rope_default_and_legacy_type_key():
    c = LlamaConfig.from_hf(SMOLLM2)
    np.testing.assert_allclose(c.rope_inv_freq(), 100000.0 ** (-np.arange(0, 64, 2) / 64),
                               rtol=1e-15)
    assert c.rope_scaling is None
    legacy = dict(LLAMA_32_1B["rope_scaling"])
    legacy["type"] = legacy.pop("rope_type")
    c2 = LlamaConfig.from_hf(with_changes(LLAMA_32_1B, rope_scaling=legacy), LLAMA_32_1B_GEN)
    assert c2.rope_scaling["rope_type"] == "llama3"
    np.testing.assert_array_equal(
        c2.rope_inv_freq(), LlamaConfig.from_hf(LLAMA_32_1B, LLAMA_32_1B_GEN).rope_inv_freq())
    c3 = LlamaConfig.from_hf(with_changes(SMOLLM2, rope_scaling={"rope_type": "default"}))
    assert c3.rope_scaling is None


def test_transformers_v5_rope_parameters():
    cfg = with_changes(LLAMA_32_1B, rope_theta=..., rope_scaling=...,
                       rope_parameters={**LLAMA_32_1B["rope_scaling"], "rope_theta": 500000.0})
    c = LlamaConfig.from_hf(cfg, LLAMA_32_1B_GEN)
    assert c == LlamaConfig.from_hf(LLAMA_32_1B, LLAMA_32_1B_GEN)
    # Both keys, saying the same (a v5 export that keeps the old key too); partial_rotary_factor 1.
    both = with_changes(LLAMA_32_1B, rope_theta=..., rope_parameters={
        **LLAMA_32_1B["rope_scaling"], "rope_theta": 500000.0, "partial_rotary_factor": 1.0})
    assert LlamaConfig.from_hf(both, LLAMA_32_1B_GEN) == c
    # hidden_act "swish" is transformers' other name of SiLU.
    assert LlamaConfig.from_hf(with_changes(LLAMA_32_1B, hidden_act="swish"), LLAMA_32_1B_GEN) == c


def test_smollm2_defaults():
    c = LlamaConfig.from_hf(SMOLLM2)
    assert (c.num_heads, c.num_kv_heads, c.head_dim) == (9, 3, 64)
    assert c.eos_token_ids == (2,) and c.bos_token_id == 1
    assert c.rope_theta == 100000.0 and isinstance(c.rope_theta, float)
    # num_key_value_heads absent -> multi-head attention.
    c2 = LlamaConfig.from_hf(with_changes(SMOLLM2, num_key_value_heads=...))
    assert c2.num_kv_heads == 9


@pytest.mark.parametrize("rope, needle", [
    ({"rope_type": "yarn", "factor": 4.0}, "yarn"),
    ({"type": "linear", "factor": 2.0}, "linear"),
    ({"type": "dynamic", "factor": 2.0}, "dynamic"),
    ({"rope_type": "longrope", "factor": 2.0}, "longrope"),
    ({"rope_type": "frobnicate"}, "frobnicate"),
    ({"factor": 8.0}, "has neither 'rope_type' nor 'type'"),
    ([8.0], r"rope_scaling=\[8.0\] must be an object or null"),
    ({"rope_type": "llama3", "factor": -8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192}, r"rope_scaling factor=-8.0 must be a positive number"),
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0}, "original_max_position_embeddings"),
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192}, "high_freq_factor"),
])
def test_unsupported_rope_scaling(rope, needle):
    with pytest.raises(ConfigError, match=needle):
        LlamaConfig.from_hf(with_changes(LLAMA_32_1B, rope_scaling=rope), LLAMA_32_1B_GEN)


@pytest.mark.parametrize("changes, needle", [
    ({"architectures": ["MistralForCausalLM"], "model_type": "mistral"}, "MistralForCausalLM"),
    ({"architectures": ..., "model_type": "qwen2"}, "qwen2"),
    ({"architectures": ..., "model_type": ...}, "architectures"),
    ({"num_key_value_heads": 5}, "divisible"),
    ({"hidden_size": ...}, "hidden_size"),
    ({"vocab_size": ..., "intermediate_size": ...}, "intermediate_size, vocab_size"),
    ({"attention_bias": True}, "attention_bias"),
    ({"attention_bias": "false"}, r"attention_bias='false'; TileInfer's Llama has no bias tensors \(give false"),
    ({"rope_parameters": [1, 2]}, r"rope_parameters=\[1, 2\] must be an object"),
    ({"hidden_act": "gelu"}, "gelu"),
    ({"eos_token_id": ...}, "eos_token_id"),
    ({"eos_token_id": 999999}, "999999"),
    ({"eos_token_id": True}, "eos_token_id"),
    ({"head_dim": 63}, "even"),
    ({"hidden_size": 2048.0}, r"hidden_size=2048.0 must be a positive integer"),
    ({"num_attention_heads": 0}, r"num_attention_heads=0 must be a positive integer"),
    ({"rms_norm_eps": 1e-50}, r"rms_norm_eps=1e-50 must be a positive number that float32 holds"),
    ({"rms_norm_eps": 1e39}, r"rms_norm_eps=1e\+39 must be a positive number that float32 holds"),
    ({"intermediate_size": 0}, r"intermediate_size=0 must be a positive int"),
    ({"rope_theta": 1.0}, r"rope_theta=1.0 must be a number > 1"),
    ({"rope_theta": float("inf")}, r"rope_theta=inf must be a number > 1"),
    ({"num_hidden_layers": 2.0}, r"num_layers=2.0 must be a positive int"),
    ({"head_dim": ..., "hidden_size": 2050}, r"hidden_size=2050 is not divisible by "
                                             r"num_attention_heads=32 and head_dim is absent"),
    ({"bos_token_id": [1, 2]}, r"bos_token_id=\[1, 2\] must be a single id"),
    ({"tie_word_embeddings": "false"}, r"tie_word_embeddings='false' must be true or false"),
    ({"tie_word_embeddings": 0}, r"tie_word_embeddings=0 must be true or false"),
    ({"num_key_value_heads": 0}, r"num_key_value_heads=0 must be a positive integer"),
    ({"num_key_value_heads": "8"}, r"num_key_value_heads='8' must be a positive integer"),
    ({"rms_norm_eps": "x"}, r"rms_norm_eps='x' must be a number"),
    ({"rms_norm_eps": True}, r"rms_norm_eps=True must be a number"),
    ({"rope_theta": "abc"}, r"rope_theta='abc' must be a number"),
    ({"rope_theta": 10 ** 400}, r"rope_theta=1000.* must be a number that float holds"),
    ({"partial_rotary_factor": 0.5}, r"partial_rotary_factor=0.5: TileInfer's RoPE rotates the whole head"),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.25}},
     r"rope_parameters partial_rotary_factor=0.25"),
    ({"rope_parameters": {"rope_theta": 1e4}}, r"rope_parameters=\{\} has neither 'rope_type' nor 'type'"),
    # transformers 4 reads rope_scaling, 5 takes it over rope_parameters: both set and unequal
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e4}},
     r"rope_scaling=.* and rope_parameters=.* disagree"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192.5}},
     r"original_max_position_embeddings=8192.5 must be a whole number of positions"),
    # The runtime's limits (format_spec.META_LIMITS): refused here, not by the runtime after planning.
    ({"head_dim": 1024}, r"head_dim=1024 is beyond the runtime's limit of 512"),
    ({"num_hidden_layers": 1025}, r"num_layers=1025 is beyond the runtime's limit of 1024"),
    ({"intermediate_size": 300000}, r"intermediate_size=300000 is beyond the runtime's limit of 262144"),
])
def test_config_errors(changes, needle):
    with pytest.raises(ConfigError, match=needle):
        LlamaConfig.from_hf(with_changes(LLAMA_32_1B, **changes))


def test_config_must_be_an_object():
    with pytest.raises(ConfigError, match=r"config.json must hold a JSON object, got list"):
        LlamaConfig.from_hf([LLAMA_32_1B])


def test_model_type_only_is_accepted():
    c = LlamaConfig.from_hf(with_changes(SMOLLM2, architectures=...))
    assert c.num_layers == 30


def test_eos_union_keeps_order():
    c = LlamaConfig.from_hf(with_changes(LLAMA_32_1B, eos_token_id=128001),
                            {"eos_token_id": [128009, 128008, 128001]})
    assert c.eos_token_ids == (128009, 128008, 128001)
    c = LlamaConfig.from_hf(with_changes(LLAMA_32_1B, eos_token_id=[7, 128001]),
                            {"eos_token_id": 128009})
    assert c.eos_token_ids == (128009, 7, 128001)
    c = LlamaConfig.from_hf(with_changes(LLAMA_32_1B, eos_token_id=5), None)
    assert c.eos_token_ids == (5,)


def test_gqa_mapping():
    c = LlamaConfig.from_hf(SMOLLM2)
    assert [c.kv_head_for(q) for q in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    c = LlamaConfig.from_hf(LLAMA_32_1B, LLAMA_32_1B_GEN)
    assert c.group_size == 4 and c.kv_head_for(31) == 7 and c.kv_head_for(4) == 1
    with pytest.raises(IndexError):
        c.kv_head_for(32)


def test_json_round_trip():
    for cfg, gen in ((LLAMA_32_1B, LLAMA_32_1B_GEN), (SMOLLM2, None)):
        c = LlamaConfig.from_hf(cfg, gen)
        d = json.loads(json.dumps(c.to_json()))
        c2 = LlamaConfig.from_json(d)
        assert c2 == c and hash(c2) == hash(c)
        np.testing.assert_array_equal(c2.rope_inv_freq(), c.rope_inv_freq())
    with pytest.raises(ConfigError, match="unknown fields"):
        LlamaConfig.from_json({**d, "extra": 1})
    d.pop("head_dim")
    with pytest.raises(ConfigError, match="head_dim"):
        LlamaConfig.from_json(d)


def test_frozen_and_input_not_aliased():
    cfg = copy.deepcopy(LLAMA_32_1B)
    c = LlamaConfig.from_hf(cfg, LLAMA_32_1B_GEN)
    cfg["rope_scaling"]["factor"] = 8.0
    assert c.rope_scaling["factor"] == 32.0
    with pytest.raises(Exception):
        c.hidden_size = 1


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
