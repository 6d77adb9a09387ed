"""Writes a Llama checkpoint as a BF16 GGUF file, for llama.cpp as a benchmark peer.

Usage: python3 py/tools/gguf_export.py --checkpoint=HF_DIR --gguf_out=model.gguf

The same weights TileInfer plans from (planner.checkpoint: BF16), in llama.cpp's layout:
matrices BF16, norms F32, Q/K rows permuted to GGUF order (`gguf_import.permute_qk`, the
inverse of what the importer undoes), llama3 RoPE scaling as the `rope_freqs` divisor table
(convert_hf_to_gguf's convention), the byte-level BPE tokenizer with its merges and the
llama.cpp name of its pre-tokenizer. `gguf_import` reads the result back to the same
checkpoint (tested), which is what makes llama.cpp's numbers comparable with ours.
Raises ExportError for a tokenizer whose pre-tokenizer llama.cpp would not know.
"""
import json
import os
import pathlib
import tempfile

import gguf
import numpy as np
from absl import app, flags, logging

from planner import checkpoint as ckpt_lib
from planner import cli
from planner import weights as weights_lib
from tools import gguf_import

FLAGS = flags.FLAGS
flags.DEFINE_string("checkpoint", None, "HF checkpoint directory.")
flags.DEFINE_string("gguf_out", None, "GGUF file to write.")

_NORMAL, _CONTROL, _USER_DEFINED = 1, 3, 4
_LAYER_GGUF = {hf: g for g, hf in gguf_import._LAYER_NAMES.items()}  # pylint: disable=protected-access
_GLOBAL_GGUF = {hf: g for g, hf in gguf_import._GLOBAL_NAMES.items()}  # pylint: disable=protected-access


class ExportError(ValueError):
    """A checkpoint that cannot be written as a GGUF llama.cpp would read the same way."""


def _pre_name(pre_tokenizer) -> str:
    for name, (spec, _) in gguf_import._PRE_TOKENIZERS.items():  # pylint: disable=protected-access
        if spec == pre_tokenizer:
            return name
    raise ExportError(f"tokenizer.json pre_tokenizer {json.dumps(pre_tokenizer)[:200]} has no "
                      f"llama.cpp name known here (gguf_import._PRE_TOKENIZERS)")


def _tokenizer(writer: gguf.GGUFWriter, directory: pathlib.Path, config) -> None:
    tok = json.loads((directory / "tokenizer.json").read_text())
    tok_cfg_path = directory / "tokenizer_config.json"
    tok_cfg = json.loads(tok_cfg_path.read_text()) if tok_cfg_path.exists() else {}
    model = tok["model"]
    if model.get("type") != "BPE":
        raise ExportError(f"tokenizer model {model.get('type')!r}; only byte-level BPE is exported")
    tokens = [None] * config.vocab_size
    for text, i in model["vocab"].items():
        tokens[i] = text
    types = [_NORMAL] * config.vocab_size
    for a in tok.get("added_tokens", []):
        tokens[a["id"]] = a["content"]
        types[a["id"]] = _CONTROL if a.get("special") else _USER_DEFINED
    for i, t in enumerate(tokens):  # ids the tokenizer leaves unnamed (padded embeddings)
        if t is None:
            tokens[i], types[i] = f"[PAD{i}]", _USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    if not merges:
        raise ExportError("tokenizer.json has no merges; llama.cpp needs them for a gpt2 tokenizer")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(_pre_name(tok.get("pre_tokenizer")))
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    if config.bos_token_id is not None:
        writer.add_bos_token_id(config.bos_token_id)
    writer.add_eos_token_id(config.eos_token_ids[0])
    writer.add_add_bos_token(bool(tok_cfg.get("add_bos_token", False)))
    if tok_cfg.get("chat_template"):
        writer.add_chat_template(tok_cfg["chat_template"])


def export_gguf(checkpoint_dir: str | os.PathLike, out_path: str | os.PathLike) -> pathlib.Path:
    """Writes `checkpoint_dir` as the GGUF `out_path` (atomically); returns the path."""
    directory, out_path = pathlib.Path(checkpoint_dir), pathlib.Path(out_path)
    ck = ckpt_lib.load_checkpoint(str(directory))
    c = ck.config
    fd, name = tempfile.mkstemp(prefix=f".{out_path.name}.tmp-", dir=out_path.parent or ".")
    os.close(fd)
    tmp = pathlib.Path(name)
    try:
        writer = gguf.GGUFWriter(str(tmp), arch="llama")
        writer.add_name(directory.name)
        writer.add_context_length(c.max_position_embeddings)
        writer.add_embedding_length(c.hidden_size)
        writer.add_block_count(c.num_layers)
        writer.add_feed_forward_length(c.intermediate_size)
        writer.add_head_count(c.num_heads)
        writer.add_head_count_kv(c.num_kv_heads)
        writer.add_key_length(c.head_dim)
        writer.add_value_length(c.head_dim)
        writer.add_rope_dimension_count(c.head_dim)
        writer.add_rope_freq_base(c.rope_theta)
        writer.add_layer_norm_rms_eps(c.rms_norm_eps)
        writer.add_vocab_size(c.vocab_size)
        writer.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
        _tokenizer(writer, directory, c)
        if c.rope_scaling:
            base = c.rope_theta ** (-np.arange(0, c.head_dim, 2, dtype=np.float64) / c.head_dim)
            writer.add_tensor(gguf_import.ROPE_FREQS, (base / c.rope_inv_freq()).astype(np.float32))
        tied = ck.weights.lm_head is ck.weights.embed
        for name, array, _ in weights_lib.named_tensors(ck.weights, c):
            if name == weights_lib.LM_HEAD_NAME and tied:
                continue
            if name in _GLOBAL_GGUF:
                gname = _GLOBAL_GGUF[name]
            else:
                layer, suffix = name.split(".")[2], ".".join(name.split(".")[3:])
                gname = f"blk.{layer}.{_LAYER_GGUF[suffix]}.weight"
            a = np.asarray(array)
            if name.endswith("q_proj.weight"):
                a = gguf_import.permute_qk(a, c.num_heads)
            elif name.endswith("k_proj.weight"):
                a = gguf_import.permute_qk(a, c.num_kv_heads)
            if a.ndim == 1:
                writer.add_tensor(gname, a.astype(np.float32))
            else:
                writer.add_tensor(gname, np.ascontiguousarray(a).view(np.uint16),
                                  raw_dtype=gguf.GGMLQuantizationType.BF16)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, out_path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    logging.info("wrote %s (%d bytes)", out_path, out_path.stat().st_size)
    return out_path


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    cli.refuse_flags_of(["tools.gguf_import"], "gguf_export")
    export_gguf(FLAGS.checkpoint, FLAGS.gguf_out)


if __name__ == "__main__":
    flags.mark_flags_as_required(["checkpoint", "gguf_out"])
    app.run(main)
