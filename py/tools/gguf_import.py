"""Imports a llama-architecture GGUF as an HF checkpoint directory with BF16 weights.

  python3 py/tools/gguf_import.py --gguf=model.gguf --hf_out=DIR [--overwrite]

Every tensor is dequantised with `gguf.quants.dequantize` (F32, F16, BF16, Q4_0, Q4_1,
Q5_0, Q5_1, Q8_0 and the K-quants all work) to float32, rounded to BF16 (nearest even),
renamed to HF names, and Q/K rows are put back into HF's rotate-half order (see
`unpermute_qk`). The output directory holds config.json, generation_config.json,
model.safetensors, tokenizer.json (Hugging Face `tokenizers` format), tokenizer_config.json
and import_provenance.json; it is written to a temporary sibling and renamed into place,
so a failed import never leaves a half-written checkpoint.

Quantisation is lossy: the imported BF16 weights are the dequantised GGUF values, not the
original model's weights.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import pathlib
import shutil
import sys
import tempfile
from typing import Any

if __package__ in (None, ""):  # run as a script: make the `py/` import root importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from planner import signals  # noqa: E402  first: its quiet start covers the slow imports below

signals.quiet_until_main(__name__)

from absl import app
from absl import flags
from absl import logging
import gguf
import ml_dtypes
import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import save_file
import tqdm

from planner import paths  # noqa: E402
from planner import weights as weights_lib  # noqa: E402
from planner.model_config import ConfigError, LlamaConfig  # noqa: E402
from planner import tokenizer_spec  # noqa: E402

_GGUF = flags.DEFINE_string("gguf", None, "Path of the llama-architecture .gguf file to import.")
_OUT = flags.DEFINE_string("hf_out", None, "HF checkpoint directory to create.")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace --hf_out if it already exists.")

BF16 = np.dtype(ml_dtypes.bfloat16)


class GGUFImportError(ValueError):
    """A GGUF file that cannot be imported as a Llama checkpoint."""


# GGUF per-layer tensor name -> HF name suffix (llama.cpp gguf-py `tensor_mapping.py`).
_LAYER_NAMES = {
    "attn_norm": "input_layernorm.weight",
    "attn_q": "self_attn.q_proj.weight",
    "attn_k": "self_attn.k_proj.weight",
    "attn_v": "self_attn.v_proj.weight",
    "attn_output": "self_attn.o_proj.weight",
    "ffn_norm": "post_attention_layernorm.weight",
    "ffn_gate": "mlp.gate_proj.weight",
    "ffn_up": "mlp.up_proj.weight",
    "ffn_down": "mlp.down_proj.weight",
}
_GLOBAL_NAMES = {
    "token_embd.weight": weights_lib.EMBED_NAME,
    "output_norm.weight": weights_lib.FINAL_NORM_NAME,
    "output.weight": weights_lib.LM_HEAD_NAME,
}
ROPE_FREQS = "rope_freqs.weight"

# llama.cpp pre-tokenizer names (`tokenizer.ggml.pre`) -> HF tokenizers pre_tokenizer JSON
# and model.ignore_merges. Regexes as in llama.cpp `llama-vocab.cpp` / the HF originals.
_LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?"
                 r"[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_BYTE_LEVEL_REGEX = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                     "use_regex": True}
_PRE_TOKENIZERS: dict[str, tuple[dict, bool]] = {
    "gpt-2": (_BYTE_LEVEL_REGEX, False),
    "smollm": ({"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, _BYTE_LEVEL_REGEX]}, False),
    "llama-bpe": ({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": _LLAMA3_REGEX}, "behavior": "Isolated",
         "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]}, True),
}
_PRE_TOKENIZERS["starcoder"] = _PRE_TOKENIZERS["refact"] = _PRE_TOKENIZERS["smollm"]
_PRE_TOKENIZERS["llama3"] = _PRE_TOKENIZERS["llama-v3"] = _PRE_TOKENIZERS["llama-bpe"]

# gguf token types (llama.cpp `llama_token_type`).
_CONTROL, _USER_DEFINED = 3, 4


# --- Q/K rotary permutation ------------------------------------------------------------

def permute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp convert_hf_to_gguf `LlamaModel.permute`: HF order -> GGUF order.

    w: (n_head * hd, ...) rows of Q (n_head = num_heads) or K (n_head = num_kv_heads).
    Exactly: w.reshape(n_head, 2, hd // 2, *rest).swapaxes(1, 2).reshape(w.shape).
    Kept for tests and for writing GGUFs; importing needs only the inverse.
    """
    rows = w.shape[0]
    return (w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def unpermute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of `permute_qk`: GGUF row order -> HF row order. w: (n_head * hd, ...).

    Why: HF Llama applies RoPE "rotate-half": within a head, dim i rotates with dim
    i + hd/2. llama.cpp's llama kernels rotate adjacent dims (2i, 2i+1), so the converter
    interleaves the two halves of every head's rows: GGUF row 2i = HF row i,
    GGUF row 2i+1 = HF row i + hd/2. Undoing it: view each head's rows as (hd/2, 2)
    (pair index, half) and swap to (2, hd/2). Q uses num_heads, K num_kv_heads (each K
    head is permuted on its own). V, O and the FFN are not permuted.
    """
    rows = w.shape[0]
    if rows % (2 * n_head):
        raise GGUFImportError(f"cannot unpermute {rows} rows into {n_head} heads of even size")
    return (w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


# --- metadata ----------------------------------------------------------------------------

_REQUIRED = object()


def _meta(reader: gguf.GGUFReader, key: str, default: Any = _REQUIRED) -> Any:
    field = reader.fields.get(key)
    if field is None:
        if default is _REQUIRED:
            raise GGUFImportError(f"GGUF metadata key {key!r} is missing; not a complete llama "
                                  f"GGUF")
        return default
    return field.contents()


def _rope_scaling(reader: gguf.GGUFReader, tensors: dict, head_dim: int, theta: float,
                  config_wo_scaling: dict) -> dict | None:
    """HF rope_scaling for the GGUF, or None. Raises for scalings we cannot express."""
    kind = _meta(reader, "llama.rope.scaling.type", "none")
    if kind not in ("none", None):
        raise GGUFImportError(f"GGUF llama.rope.scaling.type={kind!r} is not supported "
                              f"(TileInfer supports no scaling or llama3)")
    if ROPE_FREQS not in tensors:
        return None
    # convert_hf_to_gguf stores llama3 scaling as a per-pair divisor table rope_freqs
    # (f_scaled = f / rope_freqs[i]) instead of metadata. Recover Meta's parameters
    # (Llama 3.1/3.2 all use low 1, high 4, original context 8192; factor = largest
    # divisor) and accept them only if they reproduce the table.
    t = tensors[ROPE_FREQS]
    table = gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1).astype(np.float64)
    if table.shape != (head_dim // 2,):
        raise GGUFImportError(f"{ROPE_FREQS}: shape {table.shape}, expected ({head_dim // 2},)")
    guess = {"rope_type": "llama3", "factor": float(table.max()), "low_freq_factor": 1.0,
             "high_freq_factor": 4.0,
             "original_max_position_embeddings": int(
                 _meta(reader, "llama.rope.scaling.original_context_length", 8192))}
    cfg = LlamaConfig.from_hf({**config_wo_scaling, "rope_scaling": guess})
    base = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    implied = base / cfg.rope_inv_freq()
    if not np.allclose(implied, table, rtol=1e-5, atol=0):
        raise GGUFImportError(f"{ROPE_FREQS} does not match llama3 scaling with {guess}; this "
                              f"RoPE variant is not supported")
    return guess


def _hf_config(reader: gguf.GGUFReader, tensors: dict) -> dict:
    arch = _meta(reader, "general.architecture")
    if arch != "llama":
        raise GGUFImportError(f"GGUF general.architecture={arch!r}; only 'llama' is supported")
    if _meta(reader, "llama.expert_count", 0):
        raise GGUFImportError("GGUF is a mixture-of-experts llama (llama.expert_count > 0); "
                              "not supported")
    hidden = int(_meta(reader, "llama.embedding_length"))
    heads = int(_meta(reader, "llama.attention.head_count"))
    if hidden <= 0 or heads <= 0:
        raise GGUFImportError(f"GGUF llama.embedding_length={hidden} and "
                              f"llama.attention.head_count={heads} must be positive")
    kv_heads = int(_meta(reader, "llama.attention.head_count_kv", heads))
    head_dim = int(_meta(reader, "llama.attention.key_length", hidden // heads))
    rope_dim = int(_meta(reader, "llama.rope.dimension_count", head_dim))
    if rope_dim != head_dim:
        raise GGUFImportError(f"GGUF rotates {rope_dim} of {head_dim} head dims (partial RoPE); "
                              f"not supported")
    tokens = _meta(reader, "tokenizer.ggml.tokens")
    theta = float(_meta(reader, "llama.rope.freq_base", 10000.0))
    bos = _meta(reader, "tokenizer.ggml.bos_token_id", None)
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": int(_meta(reader, "llama.feed_forward_length")),
        "num_hidden_layers": int(_meta(reader, "llama.block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": int(_meta(reader, "llama.vocab_size", len(tokens))),
        # GGUF stores these as float32; write the float32's shortest decimal so that
        # config.json reads like the original model's.
        "rms_norm_eps": _f32_shortest(_meta(reader, "llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": _f32_shortest(theta),
        "max_position_embeddings": int(_meta(reader, "llama.context_length")),
        "tie_word_embeddings": "output.weight" not in tensors,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": None if bos is None else int(bos),
        "eos_token_id": _eos_ids(reader),
        "torch_dtype": "bfloat16",
    }
    cfg["rope_scaling"] = _rope_scaling(reader, tensors, head_dim, theta, cfg)
    return cfg


def _f32_shortest(x: float) -> float:
    """The shortest decimal that rounds to the same float32 (1e-05, not 9.99999974e-06)."""
    return float(str(np.float32(x)))


def _eos_ids(reader: gguf.GGUFReader) -> list[int]:
    """EOS, end-of-turn and end-of-message ids: each ends a generation in llama.cpp."""
    out: list[int] = []
    for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                "tokenizer.ggml.eom_token_id"):
        v = _meta(reader, key, None)
        if v is not None and int(v) not in out:
            out.append(int(v))
    if not out:
        raise GGUFImportError("GGUF has no tokenizer.ggml.eos_token_id")
    return out


# --- tokenizer ----------------------------------------------------------------------------

def _tokenizer_files(reader: gguf.GGUFReader, config: LlamaConfig) -> tuple[dict, dict]:
    """(tokenizer.json, tokenizer_config.json) dicts in Hugging Face `tokenizers` format."""
    model = _meta(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        raise GGUFImportError(f"GGUF tokenizer.ggml.model={model!r}; only 'gpt2' (byte-level BPE) "
                              f"is supported")
    pre = _meta(reader, "tokenizer.ggml.pre", None)
    if pre not in _PRE_TOKENIZERS:
        raise GGUFImportError(f"GGUF tokenizer.ggml.pre={pre!r} is not supported (supported: "
                              f"{', '.join(sorted(_PRE_TOKENIZERS))}); add its regexes to "
                              f"_PRE_TOKENIZERS from llama.cpp llama-vocab.cpp")
    pre_tokenizer, ignore_merges = _PRE_TOKENIZERS[pre]
    tokens = list(_meta(reader, "tokenizer.ggml.tokens"))
    types = list(_meta(reader, "tokenizer.ggml.token_type", [1] * len(tokens)))
    merges = list(_meta(reader, "tokenizer.ggml.merges"))
    if len(tokens) > config.vocab_size:
        raise GGUFImportError(f"GGUF has {len(tokens)} tokens but vocab_size={config.vocab_size}")

    vocab: dict[str, int] = {}
    for i, t in enumerate(tokens):
        if t in vocab:
            raise GGUFImportError(f"GGUF token {t!r} appears at ids {vocab[t]} and {i}; an HF "
                                  f"vocab cannot hold duplicates")
        vocab[t] = i
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": types[i] == _CONTROL}
             for i, t in enumerate(tokens) if types[i] in (_CONTROL, _USER_DEFINED)]

    def name(key):
        v = _meta(reader, key, None)
        return None if v is None else tokens[int(v)]

    bos, eos = name("tokenizer.ggml.bos_token_id"), name("tokenizer.ggml.eos_token_id")
    add_bos = _meta(reader, "tokenizer.ggml.add_bos_token", None)
    if add_bos is None:
        logging.warning("GGUF has no tokenizer.ggml.add_bos_token; assuming false")
        add_bos = False
    if _meta(reader, "tokenizer.ggml.add_eos_token", False):
        raise GGUFImportError("GGUF tokenizer.ggml.add_eos_token=true is not supported")
    if add_bos and bos is None:
        raise GGUFImportError("GGUF add_bos_token=true but no bos_token_id")

    byte_level_post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                       "use_regex": True}
    if add_bos:
        bos_id = int(_meta(reader, "tokenizer.ggml.bos_token_id"))
        post = {"type": "Sequence", "processors": [byte_level_post, {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}]}
    else:
        post = byte_level_post

    tokenizer_json = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges,
                  "vocab": vocab, "merges": merges},
    }
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "add_bos_token": bool(add_bos),
        "add_eos_token": False,
        "bos_token": bos,
        "eos_token": eos,
        "pad_token": name("tokenizer.ggml.padding_token_id"),
        "unk_token": name("tokenizer.ggml.unknown_token_id"),
        "chat_template": _meta(reader, "tokenizer.chat_template", None),
        "model_max_length": config.max_position_embeddings,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"}
                                 for a in added},
    }
    return tokenizer_json, tokenizer_config


# --- tensors ------------------------------------------------------------------------------

def _hf_name(gguf_name: str) -> str:
    if gguf_name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[gguf_name]
    parts = gguf_name.split(".")
    if (len(parts) == 4 and parts[0] == "blk" and parts[1].isdigit() and parts[3] == "weight"
        and parts[2] in _LAYER_NAMES):
        return weights_lib.layer_tensor_name(int(parts[1]), _LAYER_NAMES[parts[2]])
    raise GGUFImportError(f"GGUF tensor {gguf_name!r} has no Llama counterpart (bias, MoE or "
                          f"another architecture?); not supported")


def _dequantize(t) -> np.ndarray:
    """GGUF tensor -> BF16 array in HF orientation (GGUF lists dims innermost first)."""
    shape = tuple(int(d) for d in reversed(t.shape.tolist()))
    try:
        values = gguf.quants.dequantize(t.data, t.tensor_type)
    except NotImplementedError as e:
        raise GGUFImportError(f"GGUF tensor {t.name}: type {t.tensor_type.name} cannot be "
                              f"dequantised by the gguf package: {e}") from e
    values = np.asarray(values, dtype=np.float32).reshape(shape)
    if not np.isfinite(values).all():
        raise GGUFImportError(f"GGUF tensor {t.name}: non-finite values after dequantisation")
    return values.astype(BF16)


def file_sha256(path: pathlib.Path) -> str:
    """Hex SHA-256 of the file's bytes (import_provenance.json's source_sha256). Raises OSError."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_json(path: pathlib.Path, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")


# What import_gguf writes into its output directory, and nothing else: --overwrite replaces
# only a directory that holds these (import_provenance.json among them), never anything else.
OUTPUT_FILES = ("config.json", "generation_config.json", "tokenizer.json",
                "tokenizer_config.json", "import_provenance.json", "model.safetensors")


def content_hashes(out_dir: pathlib.Path) -> dict[str, str]:
    """Hex SHA-256 of each file import_gguf writes, but import_provenance.json itself: the
    provenance's "files" record, by which a later run can tell that an import is intact.
    Raises OSError (a file missing or unreadable)."""
    return {name: file_sha256(out_dir / name) for name in OUTPUT_FILES if name != "import_provenance.json"}


def _remove_stale_temporaries(out_dir: pathlib.Path) -> None:
    """Removes the hidden directories that an import into out_dir killed by SIGKILL (the OOM
    killer) left beside it: .NAME.tmp-PID-* (a half-written import, as large as the model) and
    .NAME.old-PID-* (an earlier import moved aside for overwrite, which this import replaces),
    once no process PID runs; one whose process runs stays. Each is logged; one that cannot be
    removed too, and the import goes on."""
    for prefix in (f".{out_dir.name}.tmp-", f".{out_dir.name}.old-"):
        paths.remove_dead_temporaries(str(out_dir.parent), prefix, directories=True,
                                      what="an import's temporary directory", output=str(out_dir))


def _check_out_dir(gguf_path: pathlib.Path, out_dir: pathlib.Path, overwrite: bool) -> None:
    """Refuses an output directory that exists (unless `overwrite` and it is an earlier
    import: OUTPUT_FILES only, with import_provenance.json), that holds the GGUF itself, or
    whose parent cannot be written. Raises FileExistsError or GGUFImportError."""
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise GGUFImportError(f"{out_dir} exists and is not a directory; give a new --hf_out")
    source, target = gguf_path.resolve(), out_dir.resolve()
    if source == target or target in source.parents:
        raise GGUFImportError(f"{out_dir} holds the GGUF being imported ({gguf_path}); give "
                              f"another --hf_out")
    if out_dir.exists():
        if not overwrite:
            raise FileExistsError(f"{out_dir} already exists; delete it or pass --overwrite")
        names = sorted(p.name for p in out_dir.iterdir())
        others = [n for n in names if n not in OUTPUT_FILES]
        if "import_provenance.json" not in names or others:
            raise GGUFImportError(
                f"{out_dir} is not a checkpoint this importer wrote ("
                + (f"it holds {others[:5]}" if others else "no import_provenance.json")
                + "): --overwrite replaces only those; give another --hf_out")
    parent = out_dir.parent
    while not parent.exists() and parent != parent.parent:  # the parents import_gguf would make
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise GGUFImportError(f"cannot create {out_dir}: {parent} is not a writable directory")


def _damaged(gguf_path: pathlib.Path, e: BaseException, where: str = "") -> GGUFImportError:
    """The error for a GGUF that the gguf reader cannot parse (truncated, damaged, or not
    a GGUF file): names the file and what the reader said."""
    return GGUFImportError(f"{gguf_path}: not a readable GGUF file{' at ' + where if where else ''} "
                           f"({type(e).__name__}: {e}); it may be damaged or truncated: re-download it")


def _check_tensor_ranges(gguf_path: pathlib.Path, tensors: list) -> None:
    """Raises GGUFImportError when two tensors' bytes [data_offset, data_offset + n_bytes)
    overlap: a tensor table that points two weights at the same bytes is damaged or crafted,
    and importing it would silently make them one weight."""
    spans = sorted((t.data_offset, t.data_offset + t.n_bytes, t.name) for t in tensors if t.n_bytes > 0)
    for (a0, a1, a), (b0, b1, b) in zip(spans, spans[1:]):
        if b0 < a1:
            raise GGUFImportError(f"{gguf_path}: tensors {a} (bytes {a0}..{a1}) and {b} (bytes "
                                  f"{b0}..{b1}) overlap in the file; it is damaged or was not "
                                  f"written by a GGUF writer: re-download or re-convert it")


def import_gguf(gguf_path: str | os.PathLike, out_dir: str | os.PathLike,
                overwrite: bool = False) -> pathlib.Path:
    """Imports `gguf_path` (llama architecture) as an HF checkpoint directory `out_dir`.

    Returns the output directory. Raises GGUFImportError for unsupported architectures,
    tensor types, tokenizers or RoPE variants, a damaged or truncated file (also one whose
    tensors overlap or repeat a name), or an output
    directory it must not write (_check_out_dir); FileExistsError when `out_dir` exists and
    `overwrite` is false. Nothing is left at `out_dir` on failure (an earlier import there
    stays as it was), nor beside it, also when interrupted (KeyboardInterrupt).
    """
    gguf_path, out_dir = pathlib.Path(gguf_path), pathlib.Path(out_dir)
    if not gguf_path.exists():
        raise FileNotFoundError(f"{gguf_path}: no such GGUF file")
    if not gguf_path.is_file():
        raise GGUFImportError(f"{gguf_path}: not a regular file; give a .gguf file")
    _check_out_dir(gguf_path, out_dir, overwrite)
    try:
        reader = gguf.GGUFReader(gguf_path)
        tensors = {t.name: t for t in reader.tensors}
    except (ValueError, IndexError, KeyError, OverflowError, MemoryError) as e:
        raise _damaged(gguf_path, e) from e
    if len(tensors) != len(reader.tensors):
        raise GGUFImportError(f"{gguf_path}: {len(reader.tensors) - len(tensors)} tensor names "
                              f"repeat; the file is damaged: re-download or re-convert it")
    _check_tensor_ranges(gguf_path, reader.tensors)
    try:
        hf_config = _hf_config(reader, tensors)
        config = LlamaConfig.from_hf(hf_config)
        tokenizer_json, tokenizer_config = _tokenizer_files(reader, config)
    except GGUFImportError as e:
        raise GGUFImportError(f"{gguf_path}: {e}") from e
    except ConfigError as e:  # a ValueError: before the catch-all below
        raise GGUFImportError(f"{gguf_path}: metadata gives an invalid Llama config: {e}") from e
    except (TypeError, ValueError, IndexError, KeyError, UnicodeDecodeError, OverflowError) as e:
        # A metadata value of the wrong type or size (an array where a count belongs, a token id
        # past the tokens, a token string that is not UTF-8): the file is not what it claims.
        raise GGUFImportError(f"{gguf_path}: malformed metadata ({type(e).__name__}: {e}); the "
                              f"file may be damaged or badly converted: re-download or re-convert "
                              f"it") from e

    by_hf: dict[str, Any] = {}
    for name, t in tensors.items():
        if name == ROPE_FREQS:
            continue  # folded into rope_scaling above
        by_hf[_hf_name(name)] = t
    qtypes = collections.Counter(t.tensor_type.name for t in tensors.values())
    logging.info("importing %s: %d tensors %s", gguf_path, len(tensors), dict(qtypes))

    with tqdm.tqdm(total=len(by_hf), desc="dequantising", unit="tensor", disable=None) as bar:
        def fetch(hf_name: str, shape: tuple[int, ...]) -> np.ndarray:
            t = by_hf.pop(hf_name, None)
            if t is None:
                raise GGUFImportError(f"{gguf_path}: no GGUF tensor for {hf_name} (expected shape "
                                      f"{shape})")
            try:
                w = _dequantize(t)
            except GGUFImportError:  # a ValueError too: says what is wrong already
                raise
            except (ValueError, IndexError, OverflowError) as e:
                raise _damaged(gguf_path, e, f"tensor {t.name}") from e
            if w.shape != shape:
                raise GGUFImportError(f"{gguf_path}: tensor {t.name} has shape {w.shape} (HF "
                                      f"order), expected {shape}")
            if hf_name.endswith("q_proj.weight"):
                w = unpermute_qk(w, config.num_heads)
            elif hf_name.endswith("k_proj.weight"):
                w = unpermute_qk(w, config.num_kv_heads)
            bar.update(1)
            return w
        weights = weights_lib.build_weights(config, fetch)
    if by_hf:
        raise GGUFImportError(f"{gguf_path}: tensors {sorted(by_hf)[:5]} were not used")
    weights_lib.check_shapes(weights, config)

    eos = hf_config["eos_token_id"]
    hf_config["eos_token_id"] = eos[0] if len(eos) == 1 else eos  # HF writes a lone id as int
    generation_config = {"bos_token_id": hf_config["bos_token_id"],
                         "eos_token_id": hf_config["eos_token_id"]}
    provenance = {
        "source": str(gguf_path.resolve()),
        "source_bytes": gguf_path.stat().st_size,
        "source_sha256": file_sha256(gguf_path),
        "general.name": _meta(reader, "general.name", None),
        "tensor_types": dict(qtypes),
        "note": "weights are dequantised GGUF values rounded to bfloat16; Q/K rows unpermuted "
                "to HF rotate-half order",
    }

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(out_dir)
    # The PID in the names tells a later import which ones a killed import left.
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-{os.getpid()}-", dir=out_dir.parent))
    old = None  # with overwrite: the earlier import, moved aside while the new one goes in
    try:
        umask = os.umask(0)
        os.umask(umask)
        _write_json(tmp / "config.json", hf_config)
        _write_json(tmp / "generation_config.json", generation_config)
        _write_json(tmp / "tokenizer.json", tokenizer_json)
        _write_json(tmp / "tokenizer_config.json", tokenizer_config)
        try:  # what the planner will read: refused now, not after the weights are written
            tokenizer_spec.TokenizerSpec.from_hf_dir(tmp, config)
        except tokenizer_spec.TokenizerError as e:
            raise GGUFImportError(f"{gguf_path}: its tokenizer metadata does not give a tokenizer the "
                                  f"planner takes: {str(e).replace(str(tmp), '<import>')}") from e
        # "pt" is the metadata transformers expects; the bytes are plain little-endian BF16.
        try:
            save_file({name: np.ascontiguousarray(a) for name, a, _ in
                       weights_lib.named_tensors(weights, config)},
                      str(tmp / "model.safetensors"), metadata={"format": "pt"})
        except SafetensorError as e:  # its I/O errors (a full disk) are not OSErrors
            raise OSError(f"cannot write {out_dir.name}/model.safetensors in {out_dir.parent}: {e}") from None
        provenance["files"] = content_hashes(tmp)  # last: a later run checks the import by it
        _write_json(tmp / "import_provenance.json", provenance)
        # mkdtemp makes a 0700 directory; give the result the permissions a plain mkdir would.
        os.chmod(tmp, 0o777 & ~umask)
        for f in tmp.iterdir():
            os.chmod(f, 0o666 & ~umask)
        if out_dir.exists():  # overwrite: move the old one aside, then swap in the new one
            old = pathlib.Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-{os.getpid()}-", dir=out_dir.parent))
            os.rename(out_dir, old / "d")
            os.rename(tmp, out_dir)
            shutil.rmtree(old)
            old = None
        else:
            os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            if (old / "d").exists() and not out_dir.exists():
                os.rename(old / "d", out_dir)  # interrupted mid-swap: the earlier import goes back
            shutil.rmtree(old, ignore_errors=True)
        raise
    logging.info("wrote %s", out_dir)
    return out_dir


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    if not _GGUF.value or not _OUT.value:
        raise app.UsageError("--gguf and --hf_out are required")
    signals.install()
    out = paths.from_invocation_dir(_OUT.value)
    try:
        import_gguf(paths.from_invocation_dir(_GGUF.value), out, overwrite=_OVERWRITE.value)
    except (GGUFImportError, OSError) as e:  # OSError: FileExistsError, a full disk, ...
        logging.error("%s", e)
        sys.exit(1)
    except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM or SIGHUP
        print(f"gguf_import: interrupted ({signals.name_of(e)}): nothing new at {out}, no "
              f"temporary directory left", file=sys.stderr)
        sys.exit(signals.end_by(e))


if __name__ == "__main__":
    app.run(main)
