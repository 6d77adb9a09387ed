"""The TileInfer package format: the one source of truth shared by Python and C++.

Every constant and record layout of the format is defined here once. Python uses it
directly; `gen_format_header.py` turns it into `cuda/plan_format.h` at build time for the
C++ host and the CUDA worker, so no constant is ever retyped by hand.

Byte layout of a package file (`.tpkg`), all integers little-endian:

    offset 0      FileHeader (64 bytes)
                    magic "TILEPKG\\0", format_version, header_bytes, section_count,
                    section_entry_bytes, file_bytes, sha256 of the section table
    offset 64     SectionEntry x section_count (64 bytes each)
                    name (16 bytes, NUL-padded), offset, bytes, sha256 of the section
    ...           sections, each starting at a multiple of SECTION_ALIGN (4096), so the
                  file can be mmap-ed and every blob is aligned:
      "meta"      UTF-8 JSON: model config, target, plan parameters, stop ids, summary
      "tokenizer" UTF-8 JSON: vocabulary, merges, special tokens, chat template
      "tensors"   TensorRecord x n   (the weights table)
      "buffers"   BufferRecord x n   (activation buffers and the K/V cache)
      "waves"     WaveRecord x n     (one per wave, in execution order)
      "tasks"     TaskRecord x n     (sorted by wave, then worker)
      "weights"   the packed weights; each tensor starts at a multiple of TENSOR_ALIGN

Plan semantics (one token at position `pos`, context length ctx = pos + 1); H hidden,
NH/NKV query/K-V heads, HD head_dim, Q = NH*HD, KV = NKV*HD, F FFN width, V vocabulary:

    EMBED          x0[r] = embed[token, r]                                  r in rows
    RMSNORM_GEMV   out[r] = sum_k W[r,k] * x[k] * g[k] / sqrt(mean(x^2) + eps)   r in rows
                   (QKV: W = [Wq; Wk; Wv] (Q+2KV, H), x = x0, out = qkv)
    ATTENTION      one K/V head `kv_head` x one context chunk `chunk` of `n_chunks`:
                   RoPE on its query heads' q and on k; the last chunk writes the K (roped)
                   and V rows of position pos to the K/V cache (aux_buf), rounded to BF16; partial
                   softmax state (o[HD] unnormalised, m = max score, l = sum exp) per query
                   head into attn[(chunk*NH + h)*(HD+2) ...]. Chunk c of C covers positions
                   [max(0, ctx-(C-c)*S), max(0, ctx-(C-1-c)*S)) with S = max(ceil(ctx/C),
                   min_chunk): the last chunk always holds pos.
    ATTN_OUT       merge the chunks of every head (flash-decoding: m* = max m_c,
                   o = sum_c o_c e^(m_c-m*) / sum_c l_c e^(m_c-m*)), then
                   x1[r] = x0[r] + sum_k Wo[r,k] * o[k]                     r in rows
    FFN            rows [a, b) of F: u = rmsnorm(x1)*g; h_j = silu(Wg[j].u) * (Wu[j].u);
                   part[slot, :] = sum_{j in [a,b)} h_j * WdT[j, :]   (WdT = Wdown^T, (F, H))
    FFN_REDUCE     x0[r] = x1[r] + sum_{s=0}^{n_parts-1} part[s, r]  (fixed order)  r in rows
    LM_HEAD        logits[r] = W[r] . (rmsnorm(x0)*g_final);  cand[slot] = (max logit over
                   rows, lowest id among ties); a non-finite logit makes the slot's id
                   CANDIDATE_NONFINITE.

The "meta" JSON object has these keys (all required):

    format_version   int, == FORMAT_VERSION
    model            LlamaConfig.to_json(): hidden_size, intermediate_size, num_layers,
                     num_heads, num_kv_heads, head_dim, vocab_size, rms_norm_eps, rope_theta,
                     rope_scaling (object or null), tie_word_embeddings,
                     max_position_embeddings, bos_token_id, eos_token_ids (list)
    target           name, compute_capability [major, minor], sm_count, workers_per_sm,
                     threads_per_worker, registers_per_thread, shared_memory_per_worker,
                     worker_fingerprint (hex string)
    plan             workers, waves, tasks, max_context, attention_chunks,
                     attention_min_chunk, ffn_parts, lm_head_slots,
                     buffers {x0, x1, qkv, attn, ffn_part, logits, cand, kv_cache: buffer id},
                     tensors {embed, rope_inv_freq: tensor id}
    stop_token_ids   list of ints (union of every EOS id the checkpoint names)
    planner          {version, source, created}
    summary          free-form numbers for people (bytes per wave, balance)

Each wave ends at a grid barrier (sync = SYNC_GRID_BARRIER). SYNC_NONE is reserved for
finer synchronisation: a wave without a barrier merges with the next one for hazards.
"""

import struct

MAGIC = b"TILEPKG\x00"
# Bump on any change to a record layout, an opcode's meaning, or a section's content.
FORMAT_VERSION = 1

SECTION_ALIGN = 4096
TENSOR_ALIGN = 256
NAME_BYTES_SECTION = 16
NAME_BYTES_TENSOR = 40
NAME_BYTES_BUFFER = 24

SECTION_NAMES = ("meta", "tokenizer", "tensors", "buffers", "waves", "tasks", "weights")

# Opcodes of TaskRecord.opcode. 0 is never valid, so a zeroed record is caught.
OPCODES = {
    "EMBED": 1,
    "RMSNORM_GEMV": 2,
    "ATTENTION": 3,
    "ATTN_OUT": 4,
    "FFN": 5,
    "FFN_REDUCE": 6,
    "LM_HEAD": 7,
}

# Element types of tensors and buffers.
DTYPES = {
    "BF16": 1,
    "F32": 2,
    "CANDIDATE": 3,  # struct { float value; int32 id; }  (8 bytes)
}
DTYPE_BYTES = {"BF16": 2, "F32": 4, "CANDIDATE": 8}

# What a buffer holds, which decides how the validator treats reads of it.
BUFFER_KINDS = {
    "ACTIVATION": 1,  # written and read within one token; read only after a write
    "KV_CACHE": 2,    # persistent: (layers, 2 (K, V), max_context, KV) BF16; row pos written by ATTENTION
    "CANDIDATES": 3,  # written by LM_HEAD, read by the selection at the next token's start
}

SYNC = {
    "SYNC_GRID_BARRIER": 1,
    "SYNC_NONE": 2,
}

NONE_ID = 0xFFFFFFFF  # an absent tensor or buffer id
CANDIDATE_NONFINITE = -1  # candidate id when a logit of the task's rows was NaN or inf

# Record layouts: (field, struct code, comment). Struct codes: I u32, i i32, H u16, Q u64,
# f f32, Ns fixed bytes. Every record is padded to a multiple of 8 bytes by explicit fields.
RECORDS = {
    "FileHeader": [
        ("magic", "8s", "MAGIC"),
        ("format_version", "I", "FORMAT_VERSION"),
        ("header_bytes", "I", "sizeof(FileHeader)"),
        ("section_count", "I", "entries in the section table"),
        ("section_entry_bytes", "I", "sizeof(SectionEntry)"),
        ("file_bytes", "Q", "total file size"),
        ("table_sha256", "32s", "SHA-256 of the section table bytes"),
    ],
    "SectionEntry": [
        ("name", "16s", "NUL-padded section name"),
        ("offset", "Q", "from the file start; a multiple of SECTION_ALIGN"),
        ("bytes", "Q", "section length"),
        ("sha256", "32s", "SHA-256 of the section bytes"),
    ],
    "TensorRecord": [
        ("name", "40s", "NUL-padded, e.g. layers.3.wqkv"),
        ("dtype", "I", "DTYPES"),
        ("rows", "I", "first dimension"),
        ("cols", "I", "second dimension (1 for vectors)"),
        ("reserved", "I", "zero"),
        ("offset", "Q", "bytes from the start of the weights section"),
    ],
    "BufferRecord": [
        ("name", "24s", "NUL-padded, e.g. qkv"),
        ("kind", "I", "BUFFER_KINDS"),
        ("dtype", "I", "DTYPES"),
        ("elements", "Q", "element count"),
    ],
    "WaveRecord": [
        ("first_task", "I", "index of its first task"),
        ("task_count", "I", "tasks in this wave"),
        ("sync", "I", "SYNC: what ends the wave"),
        ("layer", "I", "decoder layer, or NONE_ID"),
    ],
    "TaskRecord": [
        ("opcode", "H", "OPCODES"),
        ("reserved0", "H", "zero"),
        ("layer", "I", "decoder layer (0 for EMBED and LM_HEAD)"),
        ("wave", "I", "wave index"),
        ("worker", "I", "worker (thread block) index"),
        ("row_begin", "I", "first output row (opcode's row space)"),
        ("row_end", "I", "one past the last output row"),
        ("in_buf", "I", "main input buffer id"),
        ("aux_buf", "I", "second operand: residual input, K/V cache, or candidates; or NONE_ID"),
        ("out_buf", "I", "output buffer id"),
        ("weight", "I", "main weight tensor id, or NONE_ID"),
        ("weight2", "I", "FFN: up; ATTENTION: RoPE table; or NONE_ID"),
        ("weight3", "I", "FFN: down^T; or NONE_ID"),
        ("norm", "I", "RMSNorm gamma tensor id, or NONE_ID"),
        ("slot", "I", "output slot: FFN partial, LM_HEAD candidate, ATTENTION chunk"),
        ("param0", "I", "ATTENTION: kv_head; FFN_REDUCE: parts"),
        ("param1", "I", "ATTENTION: n_chunks"),
        ("param2", "I", "ATTENTION: min_chunk (positions)"),
        ("reserved1", "I", "zero"),
    ],
}


def struct_format(record: str) -> str:
    """The `struct` format string (little-endian, no implicit padding) of a record."""
    return "<" + "".join(code for _, code, _ in RECORDS[record])


def record_bytes(record: str) -> int:
    """Size in bytes of one record."""
    return struct.calcsize(struct_format(record))


def field_names(record: str) -> list:
    return [name for name, _, _ in RECORDS[record]]


for _record in RECORDS:
    assert record_bytes(_record) % 8 == 0, f"{_record} must be a multiple of 8 bytes"
