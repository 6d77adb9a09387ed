"""HF configs of the models TileInfer is measured on, for planning without weights.

Real Llama-3.2-1B weights cannot be downloaded here; its exact config is enough to plan it,
count its bytes, and write a random checkpoint of the same layout (DESIGN.md).
"""

from planner.model_config import LlamaConfig

# meta-llama/Llama-3.2-1B-Instruct config.json (keys that matter) + generation_config.json.
LLAMA_3_2_1B_HF = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
    "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192,
    "max_position_embeddings": 131072, "num_attention_heads": 32, "num_hidden_layers": 16,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": True, "vocab_size": 128256,
}
LLAMA_3_2_1B_GEN = {"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]}

# HuggingFaceTB/SmolLM2-135M-Instruct config.json (keys that matter).
SMOLLM2_135M_HF = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 576, "intermediate_size": 1536,
    "max_position_embeddings": 8192, "num_attention_heads": 9, "num_hidden_layers": 30,
    "num_key_value_heads": 3, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 100000, "tie_word_embeddings": True, "vocab_size": 49152,
}

# meta-llama/Llama-3.2-3B-Instruct config.json (keys that matter): head_dim 128, 3 query heads
# a K/V head, tied embeddings, the 1B's RoPE scaling.
LLAMA_3_2_3B_HF = dict(LLAMA_3_2_1B_HF, head_dim=128, hidden_size=3072, num_attention_heads=24,
                       num_hidden_layers=28)

# meta-llama/Llama-3.1-8B-Instruct config.json (keys that matter): head_dim 128 (hidden /
# heads; that file leaves the key out), 4 query heads a K/V head, an lm_head of its own, RoPE
# scaling factor 8.
LLAMA_3_1_8B_HF = dict(LLAMA_3_2_1B_HF, head_dim=128, hidden_size=4096, intermediate_size=14336,
                       num_hidden_layers=32, tie_word_embeddings=False,
                       rope_scaling=dict(LLAMA_3_2_1B_HF["rope_scaling"], factor=8.0))


def llama_3_2_1b() -> LlamaConfig:
    return LlamaConfig.from_hf(LLAMA_3_2_1B_HF, LLAMA_3_2_1B_GEN)


def llama_3_2_3b() -> LlamaConfig:
    return LlamaConfig.from_hf(LLAMA_3_2_3B_HF, LLAMA_3_2_1B_GEN)


def llama_3_1_8b() -> LlamaConfig:
    return LlamaConfig.from_hf(LLAMA_3_1_8B_HF, LLAMA_3_2_1B_GEN)


def smollm2_135m() -> LlamaConfig:
    return LlamaConfig.from_hf(SMOLLM2_135M_HF)


def tiny(*, hidden: int = 72, ffn: int = 100, layers: int = 2, heads: int = 9,
         kv_heads: int = 3, vocab: int = 97, head_dim: int = None, tied: bool = True,
         max_position_embeddings: int = 1024) -> LlamaConfig:
    """A small config for tests (no weights); default 9:3 heads, head_dim 8, FFN 100."""
    return LlamaConfig.from_hf({
        "architectures": ["LlamaForCausalLM"], "hidden_size": hidden,
        "intermediate_size": ffn, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "vocab_size": vocab,
        "head_dim": head_dim or hidden // heads, "tie_word_embeddings": tied,
        "max_position_embeddings": max_position_embeddings, "bos_token_id": 1,
        "eos_token_id": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0})
