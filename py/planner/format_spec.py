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

The residual stream x0 is a FIXED64 buffer: signed 64-bit integers in units of 2^-32
(fix(v) = v * 2^32 rounded to the nearest integer, ties to even; real(q) = q * 2^-32 with q
rounded to the nearest float). Its FFN contributions are integer adds, so their sum does
not depend on their order: the same bits every run without a reduction wave. fix() accepts
|v| <= FIXED_MAX_MAGNITUDE (2^21); any other value (too large, inf or NaN) gives 0 and marks
the request (executors clear the mark at its position 0), and every later LM_HEAD candidate
of the request is CANDIDATE_NONFINITE (it stops at the first). With at most FFN_MAX_PARTS + 1
terms an element a layer (each |fix(v)| <= 2^53), no sum can overflow.

    EMBED          x0[r] = fix(embed[token, r])                             r in rows
    RMSNORM_GEMV   out[r] = sum_k W[r,k] * x[k] * g[k] / sqrt(mean(x^2) + eps)   r in rows
                   (QKV: W = [Wq; Wk; Wv] (Q+2KV, H), x = real(x0), out = qkv)
    ATTENTION      one K/V head `kv_head` x one context chunk `chunk` of `n_chunks`:
                   RoPE on its query heads' q and on k; the last chunk writes the K (roped)
                   and V rows of position pos to the K/V cache (aux_buf), rounded to BF16; partial
                   softmax state (o[HD] unnormalised, m = max score, l = sum exp) per query
                   head into attn[(chunk*NH + h)*(HD+2) ...]. Chunk c of C covers positions
                   [max(0, ctx-(C-c)*S), max(0, ctx-(C-1-c)*S)) with S = max(ceil(ctx/C),
                   min_chunk): the last chunk always holds pos.
    ATTN_OUT       merge the chunks of every head (flash-decoding: m* = max m_c,
                   o = sum_c o_c e^(m_c-m*) / sum_c l_c e^(m_c-m*)), then
                   x1[r] = real(x0[r]) + sum_k Wo[r,k] * o[k];  x0[r] = fix(x1[r])   r in rows
                   (aux_buf = x0: read, then rewritten, by the task that owns rows r)
    FFN            rows [a, b) of F: u = rmsnorm(x1)*g; h_j = silu(Wg[j].u) * (Wu[j].u);
                   x0[i] += fix(sum_{j in [a,b)} h_j * WdT[j, i])  for every i in [0, H)
                   (WdT = Wdown^T, (F, H)); every FFN task of the wave adds to all of x0:
                   the only writes that may overlap within a wave ("accumulate")
    LM_HEAD        logits[r] = W[r] . (rmsnorm(real(x0))*g_final);  cand[slot] = (max logit over
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
                     buffers {x0, x1, qkv, attn, logits, cand, kv_cache: buffer id},
                     tensors {embed, rope_inv_freq: tensor id}
    stop_token_ids   list of ints (union of every EOS id the checkpoint names)
    planner          {version, source, created}
    summary          free-form numbers for people (bytes per wave, balance)

Each wave ends at a grid barrier (sync = SYNC_GRID_BARRIER). SYNC_NONE is reserved for
finer synchronisation: a wave without a barrier merges with the next one for hazards.
"""

import re
import struct

MAGIC = b"TILEPKG\x00"
# Bump on any change to a record layout, an opcode's meaning, or a section's content.
# 2: the residual stream x0 in FIXED64; FFN adds into it; FFN_REDUCE (opcode 6) gone.
FORMAT_VERSION = 2

SECTION_ALIGN = 4096
TENSOR_ALIGN = 256
NAME_BYTES_SECTION = 16
NAME_BYTES_TENSOR = 40
NAME_BYTES_BUFFER = 24

SECTION_NAMES = ("meta", "tokenizer", "tensors", "buffers", "waves", "tasks", "weights")

# Opcodes of TaskRecord.opcode. 0 is never valid, so a zeroed record is caught; 6 was
# format 1's FFN_REDUCE and is never valid either.
OPCODES = {
    "EMBED": 1,
    "RMSNORM_GEMV": 2,
    "ATTENTION": 3,
    "ATTN_OUT": 4,
    "FFN": 5,
    "LM_HEAD": 7,
}

# Element types of tensors and buffers.
DTYPES = {
    "BF16": 1,
    "F32": 2,
    "CANDIDATE": 3,  # struct { float value; int32 id; }  (8 bytes)
    "FIXED64": 4,    # int64 in units of 2^-32 (the residual stream; see fix() above)
}
DTYPE_BYTES = {"BF16": 2, "F32": 4, "CANDIDATE": 8, "FIXED64": 8}

# fix()'s range and the FFN parts that may add to one element (module docstring): 2^21 *
# 2^32 = 2^53 a term, at most 512 terms, |sum| <= 2^62 < 2^63.
FIXED_FRACTION_BITS = 32
FIXED_MAX_MAGNITUDE = 2.0 ** 21
FFN_MAX_PARTS = 511

# The largest meta value the runtime takes (host/package.cc refuses a package beyond them; the
# validator, the checkpoint's config and the planner's flags are checked against them first, so
# that the planner never writes a package the runtime refuses). Each value is at least 1.
META_LIMITS = {
    "model.hidden_size": 1 << 16,
    "model.intermediate_size": 1 << 18,
    "model.num_layers": 1024,
    "model.num_heads": 1024,
    "model.num_kv_heads": 1024,
    "model.head_dim": 512,
    "model.vocab_size": 1 << 24,
    "plan.workers": 1 << 16,
    "plan.max_context": 1 << 20,
    "plan.attention_chunks": 1 << 16,
    "plan.attention_min_chunk": 1 << 20,
    "plan.lm_head_slots": 1 << 16,
}


def limit_constant(key: str) -> str:
    """The C++ name of META_LIMITS[key]: "model.hidden_size" -> "kMaxModelHiddenSize"."""
    return "kMax" + "".join(w.capitalize() for w in re.split(r"[._]", key))


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
        ("slot", "I", "output slot: FFN part, LM_HEAD candidate, ATTENTION chunk"),
        ("param0", "I", "ATTENTION: kv_head"),
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
