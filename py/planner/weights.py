"""The tensors of a Llama model, one struct per layer, and the one visitor that walks them.

Every importer (safetensors, GGUF), the packer and the checks walk the same table below,
so that a tensor name or shape is written exactly once (gemma.cpp `weights.h`,
llama2.c `run.c`). Arrays are numpy `ml_dtypes.bfloat16`, in HF orientation
(out_features, in_features): y = W @ x.

Shape legend: H hidden_size, F intermediate_size, V vocab_size, hd head_dim,
nh num_heads, nkv num_kv_heads.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

import ml_dtypes
import numpy as np

from planner.model_config import LlamaConfig

BF16 = np.dtype(ml_dtypes.bfloat16)


class CheckpointError(ValueError):
    """A checkpoint that is missing a tensor or holds one of the wrong shape or dtype."""


@dataclasses.dataclass
class LayerWeights:
    """One decoder layer:
    x += Wo·attn(RoPE(Wq·n1), RoPE(Wk·n1), Wv·n1),  n1 = rmsnorm(x)·attn_norm;
    x += W_down·(silu(W_gate·n2) * (W_up·n2)),       n2 = rmsnorm(x)·ffn_norm."""
    attn_norm: np.ndarray  # (H,)           input_layernorm
    wq: np.ndarray         # (nh*hd, H)     q_proj, HF rotate-half row order within each head
    wk: np.ndarray         # (nkv*hd, H)    k_proj, same row order as wq
    wv: np.ndarray         # (nkv*hd, H)    v_proj
    wo: np.ndarray         # (H, nh*hd)     o_proj
    ffn_norm: np.ndarray   # (H,)           post_attention_layernorm
    w_gate: np.ndarray     # (F, H)         mlp.gate_proj
    w_up: np.ndarray       # (F, H)         mlp.up_proj
    w_down: np.ndarray     # (H, F)         mlp.down_proj


@dataclasses.dataclass
class ModelWeights:
    """The whole model. When embeddings are tied, `lm_head is embed` (one array, one upload)."""
    embed: np.ndarray               # (V, H)  model.embed_tokens
    layers: list[LayerWeights]      # num_layers entries
    final_norm: np.ndarray          # (H,)    model.norm
    lm_head: np.ndarray             # (V, H)  lm_head, or the embed object itself when tied

    @property
    def tied(self) -> bool:
        return self.lm_head is self.embed


# (field, HF name suffix, shape from config). The single source of names and shapes.
_LAYER_TABLE: tuple[tuple[str, str, Callable[[LlamaConfig], tuple[int, ...]]], ...] = (
    ("attn_norm", "input_layernorm.weight", lambda c: (c.hidden_size,)),
    ("wq", "self_attn.q_proj.weight", lambda c: (c.num_heads * c.head_dim, c.hidden_size)),
    ("wk", "self_attn.k_proj.weight", lambda c: (c.num_kv_heads * c.head_dim, c.hidden_size)),
    ("wv", "self_attn.v_proj.weight", lambda c: (c.num_kv_heads * c.head_dim, c.hidden_size)),
    ("wo", "self_attn.o_proj.weight", lambda c: (c.hidden_size, c.num_heads * c.head_dim)),
    ("ffn_norm", "post_attention_layernorm.weight", lambda c: (c.hidden_size,)),
    ("w_gate", "mlp.gate_proj.weight", lambda c: (c.intermediate_size, c.hidden_size)),
    ("w_up", "mlp.up_proj.weight", lambda c: (c.intermediate_size, c.hidden_size)),
    ("w_down", "mlp.down_proj.weight", lambda c: (c.hidden_size, c.intermediate_size)),
)
EMBED_NAME = "model.embed_tokens.weight"
FINAL_NORM_NAME = "model.norm.weight"
LM_HEAD_NAME = "lm_head.weight"


def layer_tensor_name(layer: int, suffix: str) -> str:
    return f"model.layers.{layer}.{suffix}"


def expected_tensors(config: LlamaConfig) -> list[tuple[str, tuple[int, ...]]]:
    """(HF name, shape) of every tensor an HF checkpoint of `config` stores, in file order.

    lm_head.weight is listed only when embeddings are untied (HF omits it when tied).
    """
    h, v = config.hidden_size, config.vocab_size
    out = [(EMBED_NAME, (v, h))]
    for i in range(config.num_layers):
        out += [(layer_tensor_name(i, suffix), shape(config)) for _, suffix, shape in _LAYER_TABLE]
    out.append((FINAL_NORM_NAME, (h,)))
    if not config.tie_word_embeddings:
        out.append((LM_HEAD_NAME, (v, h)))
    return out


def named_tensors(weights: ModelWeights, config: LlamaConfig
                  ) -> Iterator[tuple[str, np.ndarray, tuple[int, ...]]]:
    """Yields (HF name, array, expected shape) for every stored tensor, in file order.

    The expected shape comes from `config` (the weights alone cannot say what they should
    be). A tied lm_head is not yielded, as in an HF file; an untied one is.
    """
    h, v = config.hidden_size, config.vocab_size
    yield EMBED_NAME, weights.embed, (v, h)
    for i, layer in enumerate(weights.layers):
        for field, suffix, shape in _LAYER_TABLE:
            yield layer_tensor_name(i, suffix), getattr(layer, field), shape(config)
    yield FINAL_NORM_NAME, weights.final_norm, (h,)
    if not weights.tied:
        yield LM_HEAD_NAME, weights.lm_head, (v, h)


def build_weights(config: LlamaConfig,
                  fetch: Callable[[str, tuple[int, ...]], np.ndarray]) -> ModelWeights:
    """Builds ModelWeights by calling fetch(hf_name, expected_shape) once per stored tensor.

    When tied, lm_head is the embed array itself. The caller checks with `check_shapes`.
    """
    h, v = config.hidden_size, config.vocab_size
    embed = fetch(EMBED_NAME, (v, h))
    layers = []
    for i in range(config.num_layers):
        layers.append(LayerWeights(**{
            field: fetch(layer_tensor_name(i, suffix), shape(config))
            for field, suffix, shape in _LAYER_TABLE}))
    final_norm = fetch(FINAL_NORM_NAME, (h,))
    lm_head = embed if config.tie_word_embeddings else fetch(LM_HEAD_NAME, (v, h))
    return ModelWeights(embed=embed, layers=layers, final_norm=final_norm, lm_head=lm_head)


def check_shapes(weights: ModelWeights, config: LlamaConfig) -> None:
    """Checks every tensor is a bf16 ndarray of the shape `config` implies.

    Raises:
      CheckpointError naming the tensor, its shape and dtype, and the expected ones; also
      when the layer count differs or tying disagrees with config.tie_word_embeddings.
    """
    if len(weights.layers) != config.num_layers:
        raise CheckpointError(f"weights have {len(weights.layers)} layers, config says "
                              f"num_layers={config.num_layers}")
    if weights.tied != config.tie_word_embeddings:
        raise CheckpointError(
            f"lm_head {'is' if weights.tied else 'is not'} the embedding array but config says "
            f"tie_word_embeddings={config.tie_word_embeddings}")
    for name, array, shape in named_tensors(weights, config):
        if not isinstance(array, np.ndarray):
            raise CheckpointError(f"{name}: expected a numpy array of shape {shape} bfloat16, got "
                                  f"{type(array).__name__}")
        if array.shape != shape or array.dtype != BF16:
            raise CheckpointError(f"{name}: shape {array.shape} dtype {array.dtype}, expected "
                                  f"shape {shape} dtype bfloat16")
