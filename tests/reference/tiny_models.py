"""Writes small random Llama checkpoints in HF layout, for tests.

The weights are random but well-scaled (linear layers ~N(0, 1/in_features), embeddings
~N(0, 1), norms ~1 +- 0.1) so activations stay O(1) through many layers and a bug shows
up as a large difference rather than drowning in overflow or underflow. The tokenizer is a
valid byte-level BPE (loads in HF `tokenizers`) of exactly `vocab` tokens.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

from tests.reference import bpe

_DTYPES = {"bfloat16": np.dtype(ml_dtypes.bfloat16), "float16": np.dtype(np.float16),
           "float32": np.dtype(np.float32)}
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
BOS_ID, EOS_ID = 1, 2
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                 "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
                 "{% endif %}")


def tiny_tokenizer(vocab_size: int) -> tuple[dict, dict]:
    """(tokenizer.json, tokenizer_config.json) dicts: a byte-level BPE of vocab_size tokens.

    Ids 0-2 are the special tokens, then byte symbols (printable ASCII first; all 256 only
    when vocab_size >= 259, otherwise some bytes cannot be encoded), then merges of letters.
    """
    if vocab_size < len(SPECIAL_TOKENS) + 1:
        raise ValueError(f"vocab_size={vocab_size} too small for a tokenizer")
    b2u = bpe.byte_to_unicode()
    byte_syms = [b2u[b] for b in range(32, 127)] + [b2u[b] for b in range(256)
                                                     if not 32 <= b < 127]
    tokens = list(SPECIAL_TOKENS) + byte_syms[:vocab_size - len(SPECIAL_TOKENS)]
    present = set(tokens)
    letters = [c for c in "etaoinshrdlucmfwypvbgkjqxz" if c in present]
    merges: list[str] = []
    lefts = [t for t in ["Ġ"] + letters if t in present]  # "Ġ" is the byte-level space
    i = 0
    while len(tokens) < vocab_size and i < len(lefts):
        for b in letters:
            if len(tokens) >= vocab_size:
                break
            merged = lefts[i] + b
            if merged not in present:
                tokens.append(merged)
                present.add(merged)
                merges.append(f"{lefts[i]} {b}")
                lefts.append(merged)
        i += 1
    if len(tokens) != vocab_size:
        raise ValueError(f"could not build {vocab_size} tokens")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    tokenizer_json = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for i, t in enumerate(SPECIAL_TOKENS)],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": {**byte_level, "trim_offsets": False},
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
    }
    tokenizer_config = {"add_bos_token": False, "bos_token": SPECIAL_TOKENS[BOS_ID],
                        "eos_token": SPECIAL_TOKENS[EOS_ID], "chat_template": CHAT_TEMPLATE,
                        "tokenizer_class": "PreTrainedTokenizerFast"}
    return tokenizer_json, tokenizer_config


def _write_json(path: pathlib.Path, data) -> None:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def write_tiny_checkpoint(directory, *, hidden: int, ffn: int, layers: int, heads: int,
                          kv_heads: int, vocab: int, head_dim: int | None = None,
                          dtype: str = "bfloat16", tied: bool = True,
                          duplicate_lm_head: bool = False, sharded: bool = False,
                          paired_lm_head_rows: bool = False,
                          rope_scaling: dict | None = None, rope_theta: float = 10000.0,
                          max_position_embeddings: int = 1024,
                          seed: int = 0, parallel: bool = False) -> dict[str, np.ndarray]:
    """Writes a random Llama checkpoint as an HF directory; returns {HF name: array written}.

    dtype: "bfloat16" | "float16" | "float32", the tensors' stored dtype.
    tied: tie_word_embeddings; duplicate_lm_head (with tied) also stores lm_head = embed.
    paired_lm_head_rows (untied): lm_head row 2k+1 = row 2k, so every logit has a twin and
    greedy selection must break ties to the lower id.
    sharded: three shards + model.safetensors.index.json instead of model.safetensors.
    parallel: each tensor from its own generator (seed, index) in float32, drawn by a thread
    per CPU: the same distributions, other values than the default's sequential draw, and
    faster (float32 draws, all cores; the sequential draw took ~4 min of a Llama 3.1 8B
    shape's make on the GPU machine). For the GPU machine's big random checkpoints
    (tests/gpu/make_models.py); golden packages use the default.
    """
    if dtype not in _DTYPES:
        raise ValueError(f"dtype={dtype!r} not in {sorted(_DTYPES)}")
    if paired_lm_head_rows and tied:
        raise ValueError("paired_lm_head_rows needs tied=False")
    if duplicate_lm_head and not tied:
        raise ValueError("duplicate_lm_head only makes sense with tied=True")
    root = pathlib.Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    hd = head_dim or hidden // heads
    rng = np.random.default_rng(seed)
    np_dtype = _DTYPES[dtype]

    # (name, shape, mean, standard deviation), in the draw order: the embedding N(0, 1), the
    # norms' scales N(1, 0.1^2), each linear layer's (out, in) N(0, 1 / in).
    specs = [("model.embed_tokens.weight", (vocab, hidden), 0.0, 1.0)]

    def linear(name, out_f, in_f):
        specs.append((name, (out_f, in_f), 0.0, 1.0 / np.sqrt(in_f)))

    def norm(name, n):
        specs.append((name, (n,), 1.0, 0.1))

    for i in range(layers):
        p = f"model.layers.{i}."
        norm(p + "input_layernorm.weight", hidden)
        linear(p + "self_attn.q_proj.weight", heads * hd, hidden)
        linear(p + "self_attn.k_proj.weight", kv_heads * hd, hidden)
        linear(p + "self_attn.v_proj.weight", kv_heads * hd, hidden)
        linear(p + "self_attn.o_proj.weight", hidden, heads * hd)
        norm(p + "post_attention_layernorm.weight", hidden)
        linear(p + "mlp.gate_proj.weight", ffn, hidden)
        linear(p + "mlp.up_proj.weight", ffn, hidden)
        linear(p + "mlp.down_proj.weight", hidden, ffn)
    norm("model.norm.weight", hidden)
    if not tied:
        linear("lm_head.weight", vocab, hidden)

    if parallel:
        def draw(item):
            index, (name, shape, mean, std) = item
            z = np.random.default_rng([seed, index]).standard_normal(shape, dtype=np.float32)
            z *= np.float32(std)
            z += np.float32(mean)
            return name, z.astype(np_dtype)

        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            tensors = dict(pool.map(draw, enumerate(specs)))
    else:
        # Each tensor is drawn in float64, rounded to float32, then to the stored dtype right
        # away (Llama-1B shapes would not fit in memory as float32 all at once). The draw
        # order, these expressions and the two roundings are fixed: golden packages depend on
        # these exact values.
        tensors = {}
        for name, shape, mean, std in specs:
            if mean == 1.0:  # a norm's scale
                w = 1.0 + 0.1 * rng.normal(size=shape[0])
            else:
                w = rng.normal(0.0, std, shape)
            tensors[name] = w.astype(np.float32).astype(np_dtype)
    if not tied:
        if paired_lm_head_rows:
            w = tensors["lm_head.weight"]
            w[1::2] = w[0::2][:w[1::2].shape[0]]
    elif duplicate_lm_head:
        tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].copy()

    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "vocab_size": vocab,
        "rms_norm_eps": 1e-5, "rope_theta": rope_theta, "rope_scaling": rope_scaling,
        "max_position_embeddings": max_position_embeddings, "tie_word_embeddings": tied,
        "hidden_act": "silu",
        "bos_token_id": BOS_ID, "eos_token_id": EOS_ID, "torch_dtype": dtype,
    }
    if head_dim is not None:
        config["head_dim"] = head_dim
    _write_json(root / "config.json", config)
    _write_json(root / "generation_config.json", {"bos_token_id": BOS_ID, "eos_token_id": [EOS_ID]})
    tok_json, tok_cfg = tiny_tokenizer(vocab)
    _write_json(root / "tokenizer.json", tok_json)
    _write_json(root / "tokenizer_config.json", tok_cfg)

    if sharded:
        names = list(tensors)
        n_shards = min(3, len(names))
        weight_map = {}
        for s in range(n_shards):
            fname = f"model-{s + 1:05d}-of-{n_shards:05d}.safetensors"
            part = names[s * len(names) // n_shards:(s + 1) * len(names) // n_shards]
            save_file({k: tensors[k] for k in part}, str(root / fname), metadata={"format": "pt"})
            weight_map.update({k: fname for k in part})
        total = int(sum(t.nbytes for t in tensors.values()))
        _write_json(root / "model.safetensors.index.json",
                    {"metadata": {"total_size": total}, "weight_map": weight_map})
    else:
        save_file(tensors, str(root / "model.safetensors"), metadata={"format": "pt"})
    return tensors


def poison_row(directory, tensor: str, row: int, value: float = float("inf")) -> None:
    """Sets row `row` of `tensor` in a single-file checkpoint written above to `value`
    (e.g. inf), for tests of the runtime's non-finite handling."""
    from safetensors.numpy import load_file
    path = pathlib.Path(directory) / "model.safetensors"
    tensors = load_file(str(path))
    tensors[tensor][row] = value
    save_file(tensors, str(path), metadata={"format": "pt"})


def write_residual_overflow_checkpoint(directory) -> None:
    """A tiny single-layer checkpoint (vocab 60) whose token 2 embeds to 4e6, finite but beyond
    the FIXED64 residual's range (format_spec: |v| <= 2^21): a request that feeds token 2 must
    stop with the non-finite error, at the first logits from that position on."""
    write_tiny_checkpoint(directory, hidden=64, ffn=96, layers=1, heads=4, kv_heads=2, vocab=60,
                          tied=False, seed=4)
    poison_row(directory, "model.embed_tokens.weight", 2, value=4.0e6)
