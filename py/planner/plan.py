"""Cuts one decode step of a Llama model into tile tasks, one worker and one wave each.

The plan is static: it depends on the model's shapes, the target's worker count and the
K/V cache length, never on the token. Its records are plain dicts whose keys are exactly the
fields of format_spec.RECORDS (names as str), so the packer writes them as they are and the
validator reads a plan and a package the same way.

Waves (every one ends at a grid barrier), L = num_layers, W = workers:

    0                EMBED          x0 <- fix(embed[token])        rows of H over W
    1 + 4l + 0       RMSNORM_GEMV   qkv <- [Wq;Wk;Wv] rmsnorm(x0)  rows of Q+2KV over W
    1 + 4l + 1       ATTENTION      attn <- kv head x chunk        NKV*C tasks
    1 + 4l + 2       ATTN_OUT       x1 <- x0 + Wo merge(attn),     rows of H over W
                                    x0 <- fix(x1)
    1 + 4l + 3       FFN            x0 += fix(fused SwiGLU MLP)    rows of F over W, slot s
    4L + 1           LM_HEAD        logits, cand[s]                rows of V over W, slot s

x0, the residual stream, is FIXED64 (format_spec): the FFN tasks add their parts of the
down projection into it with integer adds, whose sum does not depend on their order, so no
reduction wave (and no barrier) follows the FFN wave (format 1 had an FFN_REDUCE wave).

Balance is by bytes: in a row-split weight wave every row of the operand has the same width,
so contiguous equal row counts stream equal bytes, up to one row of rounding. With 132
workers one row is a visible fraction of a small wave (Llama-1B Wo: 2048/132 = 15.5 rows,
so 15 or 16: spread 6.5%); byte_balance reports that honestly.
"""

import collections
import dataclasses
from typing import List, NamedTuple, Optional, Tuple

from planner import format_spec as spec
from planner.model_config import LlamaConfig
from planner.target import Target

NONE_ID = spec.NONE_ID
OP = spec.OPCODES
BUF_KIND = spec.BUFFER_KINDS
DT = spec.DTYPES

# Opcodes whose tasks stream rows of weight matrices (the bandwidth-bound waves).
WEIGHT_OPCODES = ("RMSNORM_GEMV", "ATTN_OUT", "FFN", "LM_HEAD")
OPCODE_NAMES = {v: k for k, v in OP.items()}


@dataclasses.dataclass
class Plan:
    """One decode step as tasks.

    Attributes:
      config, target, max_context: what the plan was made from (max_context in positions).
      tensors: TensorRecord dicts; offsets are bytes into the weights section, TENSOR_ALIGN
        aligned, in table order.
      buffers, waves, tasks: BufferRecord / WaveRecord / TaskRecord dicts; tasks sorted by
        (wave, worker).
      params: the package's meta["plan"] object.
      weights_bytes: size of the packed weights section (end of the last tensor).
    """
    config: LlamaConfig
    target: Target
    max_context: int
    tensors: List[dict]
    buffers: List[dict]
    waves: List[dict]
    tasks: List[dict]
    params: dict
    weights_bytes: int

    def tensor_id(self, name: str) -> int:
        return _index_by_name(self.tensors, name, "tensor")

    def buffer_id(self, name: str) -> int:
        return _index_by_name(self.buffers, name, "buffer")


def _index_by_name(records, name, what):
    for i, r in enumerate(records):
        if r["name"] == name:
            return i
    raise KeyError(f"no {what} named {name!r}")


def split_rows(n: int, parts: int) -> List[Tuple[int, int, int]]:
    """Contiguous split of rows [0, n) over `parts` workers.

    Worker i gets [floor(i*n/parts), floor((i+1)*n/parts)); empty ranges (n < parts) are
    skipped. Returns [(worker, begin, end)], sizes differ by at most one row.
    """
    out = []
    for i in range(parts):
        a, b = (i * n) // parts, ((i + 1) * n) // parts
        if b > a:
            out.append((i, a, b))
    return out


def _task(opcode: str, wave: int, worker: int, rows: Tuple[int, int], layer: int = 0,
          **fields) -> dict:
    """A TaskRecord dict: every id field defaults to NONE_ID, every number to 0."""
    t = {name: 0 for name in spec.field_names("TaskRecord")}
    for name in ("in_buf", "aux_buf", "out_buf", "weight", "weight2", "weight3", "norm"):
        t[name] = NONE_ID
    t.update(opcode=OP[opcode], layer=layer, wave=wave, worker=worker,
             row_begin=rows[0], row_end=rows[1])
    for k, v in fields.items():
        if k not in t:
            raise KeyError(f"TaskRecord has no field {k!r}")
        t[k] = v
    return t


# The default smallest attention chunk, in positions, by the number of K/V heads
# (default_attention_min_chunk). Measured on the H200 with the v46 worker and the tile choice
# by the longest chunk's real length (docs/PERFORMANCE.md, calls AC2, TC1 and TC; bench
# windows, one binary, plans differing only in min_chunk): the 1B shape (8 K/V heads) with
# min_chunk 128 against 32: -2.6 to -2.9% at context 512, -4.0 to -4.5% at 1024, within
# +-0.6% at 1, 256, 2048 and 4096 (fewer, longer chunks: fewer partial results for ATTN_OUT
# to merge, still 8 x 4-8 attention tasks). SmolLM2 (3 K/V heads) loses 1.6-4.7% at 256-512
# with min_chunk 96-128 (6-9 attention tasks instead of 24) and keeps 32, which an older
# worker measured the fastest or within 0.5% of 16, 64, 128 and 256 for both shapes
# ("The attention split by measurement"; results/2026-11-30-h200-phases).
ATTENTION_MIN_CHUNK = 32
ATTENTION_MIN_CHUNK_MANY_KV_HEADS = 128
ATTENTION_MANY_KV_HEADS = 8


def default_attention_min_chunk(num_kv_heads: int) -> int:
    """The planner's default smallest attention chunk (positions) for `num_kv_heads` heads:
    ATTENTION_MIN_CHUNK_MANY_KV_HEADS (128) from ATTENTION_MANY_KV_HEADS (8) K/V heads up,
    ATTENTION_MIN_CHUNK (32) below; measured, see the constants."""
    if num_kv_heads >= ATTENTION_MANY_KV_HEADS:
        return ATTENTION_MIN_CHUNK_MANY_KV_HEADS
    return ATTENTION_MIN_CHUNK


# The default chunk count keeps a chunk at max_context at least this many positions long:
# C = min(W // NKV, ceil(max_context / 192)). Measured on the H200 with the v46 worker
# (docs/PERFORMANCE.md, calls AC and AC2; bench windows, one binary, plans differing only in
# C): at max_context 4096 the best of the counts tried was 16 for the 1B shape (256
# positions a chunk at 4096; 8 and 11 were 1.6-2.9% slower there, though 3.7-4.3% faster at
# context 1024: one count per plan cannot serve both) and 22 for SmolLM2 (187
# positions; the former default 44, 94 positions, was 0.3-6.2% slower at every context, 16
# and 11 slower at 4096). A chunk of 16 warps x 16 positions is one tile pass of the
# worker's attention; shorter chunks at the long end only add ATTN_OUT merge work.
ATTENTION_CHUNK_MIN_POSITIONS = 192
# The most context chunks a K/V head the runtime accepts (host/package.cc: plan.attention_chunks).
MAX_ATTENTION_CHUNKS = spec.META_LIMITS["plan.attention_chunks"]


# The default worker count (default_workers): the largest multiple of WORKER_MULTIPLE that
# keeps at least WORKER_KEEP_FRACTION of the target's workers, else all of them. Measured on
# the H200 (docs/PERFORMANCE.md, calls RD2 and RD3, two machine starts; bench windows, one
# binary, plans differing only in the worker count): 128 of its 132 workers against 132,
# SmolLM2 -1.7 to -2.0% at contexts 1-4096 (its FFN tasks become 12 rows each, one batch of
# the down projection's 12-row loads, where 132 gave 11-12; its waves are latency-bound, so
# the 4 idle SMs cost nothing), the 1B -0.2 to -0.4% (rows divide evenly: 24 / 16 / 64 a
# task); 96 and 64 workers were 2.5-7.8% slower for SmolLM2. Model widths are multiples of
# 64, so a multiple of 32 workers splits them evenly; 128 SMs stream as fast as 132 (the
# floor's SM sweep). Below 95% of the SMs a plan would give up bandwidth: all of them then.
WORKER_MULTIPLE = 32
WORKER_KEEP_FRACTION = 0.95


def default_workers(available: int) -> int:
    """Workers a plan uses by default out of `available` (the target's sm_count *
    workers_per_sm), at most format_spec.FFN_MAX_PARTS (one FFN part a worker): 132 -> 128,
    20 -> 20, 108 -> 108 (96 would keep 89%), 528 -> 511 (480 would keep 94% of 511)."""
    available = min(available, spec.FFN_MAX_PARTS)
    w = available // WORKER_MULTIPLE * WORKER_MULTIPLE
    return w if w > 0 and w >= WORKER_KEEP_FRACTION * available else available


def make_plan(config: LlamaConfig, target: Target, *, max_context: int,
              attention_chunks: Optional[int] = None,
              attention_min_chunk: Optional[int] = None,
              workers: Optional[int] = None,
              qkv_parts: Optional[int] = None,
              attn_out_parts: Optional[int] = None,
              ffn_parts: Optional[int] = None,
              lm_head_slots: Optional[int] = None) -> Plan:
    """Plans one decode step of `config` on `target`.

    Args:
      config: model shapes.
      target: the GPU; its `workers` bound the plan's.
      max_context: K/V cache length in positions (2 <= max_context <=
        config.max_position_embeddings).
      attention_chunks: context chunks per K/V head, C; default
        max(1, min(W // num_kv_heads, ceil(max_context / ATTENTION_CHUNK_MIN_POSITIONS))):
        the NKV*C attention tasks fill the grid at most once, and a chunk at max_context
        holds at least ATTENTION_CHUNK_MIN_POSITIONS positions.
      attention_min_chunk: smallest chunk in positions; short contexts use fewer, longer
        chunks instead of many tiny ones (format_spec, ATTENTION); default
        default_attention_min_chunk(num_kv_heads): 128 from 8 K/V heads up, else 32.
      workers: thread blocks the plan uses, 1..target.workers; default
        default_workers(target.workers) (132 -> 128 on the H200).
      qkv_parts, attn_out_parts, ffn_parts, lm_head_slots: at most this many tasks in each
        QKV (RMSNORM_GEMV), ATTN_OUT, FFN and LM_HEAD wave, each 1..workers (default:
        workers): the wave's rows are split evenly over workers 0..parts-1 (fewer when the
        wave has fewer rows than parts) and the others have no task in it. Each row is one
        dot product whatever its task (the GPU's row pairs sum in the single-row order), so
        QKV, ATTN_OUT and LM_HEAD splits are designed to leave the logits bit-identical
        (tested on the CPU executor; tests/gpu/sweep_parts.sh compares the GPU's); FFN parts
        are rounded to fixed point each before their sum, so they move the logits within
        that rounding. Measurement knobs, not tuned defaults. With ffn_parts <=
        FFN_MAX_PARTS, workers may exceed it.

    Returns:
      Plan with 4*num_layers + 2 waves.

    Raises:
      ValueError: max_context, attention_chunks, attention_min_chunk, workers or a wave's
        parts out of range.
    """
    c = config
    H, F, V, L = c.hidden_size, c.intermediate_size, c.vocab_size, c.num_layers
    NH, NKV, HD = c.num_heads, c.num_kv_heads, c.head_dim
    Q, KV = NH * HD, NKV * HD
    W = default_workers(target.workers) if workers is None else workers
    max_workers = min(target.workers, spec.META_LIMITS["plan.workers"])
    if not isinstance(W, int) or isinstance(W, bool) or not 1 <= W <= max_workers:
        raise ValueError(f"workers={workers!r} must be in [1, {max_workers}] (the target's "
                         f"sm_count x workers_per_sm, and at most the runtime's "
                         f"{spec.META_LIMITS['plan.workers']})")
    # 2 at least: a request's prompt and new tokens together fit in max_context (host/generate.cc),
    # so a one-position cache would serve no request at all.
    longest = min(c.max_position_embeddings, spec.META_LIMITS["plan.max_context"])
    if (not isinstance(max_context, int) or isinstance(max_context, bool)
            or not 2 <= max_context <= longest):
        raise ValueError(f"max_context={max_context!r} must be in [2, {longest}] (at most the "
                         f"model's max_position_embeddings={c.max_position_embeddings} and the "
                         f"runtime's {spec.META_LIMITS['plan.max_context']}; a request's prompt "
                         f"and new tokens together fit in it: 2 is one prompt token and one new one)")
    if attention_chunks is None:
        C = max(1, min(W // NKV, -(-max_context // ATTENTION_CHUNK_MIN_POSITIONS)))
    else:
        C = attention_chunks
    if not isinstance(C, int) or isinstance(C, bool) or not 1 <= C <= min(max_context, MAX_ATTENTION_CHUNKS):
        raise ValueError(f"attention_chunks={attention_chunks!r} must be an int in [1, "
                         f"{min(max_context, MAX_ATTENTION_CHUNKS)}] (at most one a position of "
                         f"max_context={max_context}, and at most {MAX_ATTENTION_CHUNKS}, the "
                         f"runtime's limit)")
    if attention_min_chunk is None:
        attention_min_chunk = default_attention_min_chunk(NKV)
    if (not isinstance(attention_min_chunk, int) or isinstance(attention_min_chunk, bool)
            or not 1 <= attention_min_chunk <= spec.META_LIMITS["plan.attention_min_chunk"]):
        raise ValueError(f"attention_min_chunk={attention_min_chunk!r} must be an int in [1, "
                         f"{spec.META_LIMITS['plan.attention_min_chunk']}] (the runtime's limit)")

    parts = {}
    for name, value in (("qkv_parts", qkv_parts), ("attn_out_parts", attn_out_parts),
                        ("ffn_parts", ffn_parts), ("lm_head_slots", lm_head_slots)):
        value = W if value is None else value
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= W:
            raise ValueError(f"{name}={value!r} must be an int in [1, workers={W}]")
        parts[name] = value

    # --- tensors: execution order, so a prefetcher walks the weights section forwards.
    tensors: List[dict] = []
    offset = 0

    def add_tensor(name, rows, cols, dtype="BF16"):
        nonlocal offset
        offset = -(-offset // spec.TENSOR_ALIGN) * spec.TENSOR_ALIGN
        tensors.append(dict(name=name, dtype=DT[dtype], rows=rows, cols=cols, reserved=0,
                            offset=offset))
        offset += rows * cols * spec.DTYPE_BYTES[dtype]
        return len(tensors) - 1

    t_embed = add_tensor("embed", V, H)
    layer_t = []
    for l in range(L):
        p = f"layers.{l}."
        layer_t.append(dict(
            attn_norm=add_tensor(p + "attn_norm", H, 1),
            wqkv=add_tensor(p + "wqkv", Q + 2 * KV, H),
            wo=add_tensor(p + "wo", H, Q),
            ffn_norm=add_tensor(p + "ffn_norm", H, 1),
            w_gate=add_tensor(p + "w_gate", F, H),
            w_up=add_tensor(p + "w_up", F, H),
            w_down_t=add_tensor(p + "w_down_t", F, H),
        ))
    t_final_norm = add_tensor("final_norm", H, 1)
    t_lm_head = t_embed if c.tie_word_embeddings else add_tensor("lm_head", V, H)
    t_rope = add_tensor("rope_inv_freq", HD // 2, 1, "F32")
    weights_bytes = offset

    ffn_split = split_rows(F, parts["ffn_parts"])
    lm_split = split_rows(V, parts["lm_head_slots"])
    ffn_parts, lm_slots = len(ffn_split), len(lm_split)
    if ffn_parts > spec.FFN_MAX_PARTS:
        raise ValueError(f"{ffn_parts} FFN parts (workers={W}): the fixed-point residual "
                         f"takes at most {spec.FFN_MAX_PARTS}; plan with --ffn_parts or "
                         f"--workers <= {spec.FFN_MAX_PARTS}")

    # --- buffers
    buffers: List[dict] = []

    def add_buffer(name, elements, kind="ACTIVATION", dtype="F32"):
        buffers.append(dict(name=name, kind=BUF_KIND[kind], dtype=DT[dtype], elements=elements))
        return len(buffers) - 1

    b = dict(
        x0=add_buffer("x0", H, dtype="FIXED64"),
        x1=add_buffer("x1", H),
        qkv=add_buffer("qkv", Q + 2 * KV),
        attn=add_buffer("attn", C * NH * (HD + 2)),
        logits=add_buffer("logits", V),
        cand=add_buffer("cand", lm_slots, "CANDIDATES", "CANDIDATE"),
        kv_cache=add_buffer("kv_cache", L * 2 * max_context * KV, "KV_CACHE", "BF16"),
    )

    # --- waves and tasks
    waves: List[dict] = []
    tasks: List[dict] = []

    def add_wave(layer, wave_tasks):
        wave_tasks.sort(key=lambda t: t["worker"])  # stable: chunk order kept per worker
        waves.append(dict(first_task=len(tasks), task_count=len(wave_tasks),
                          sync=spec.SYNC["SYNC_GRID_BARRIER"], layer=layer))
        tasks.extend(wave_tasks)

    w = 0
    add_wave(NONE_ID, [_task("EMBED", w, i, (a, e), out_buf=b["x0"], weight=t_embed)
                       for i, a, e in split_rows(H, W)])
    for l in range(L):
        lt = layer_t[l]
        w += 1
        add_wave(l, [_task("RMSNORM_GEMV", w, i, (a, e), l, in_buf=b["x0"], out_buf=b["qkv"],
                           weight=lt["wqkv"], norm=lt["attn_norm"])
                     for i, a, e in split_rows(Q + 2 * KV, parts["qkv_parts"])])
        w += 1
        add_wave(l, [_task("ATTENTION", w, (kv * C + ch) % W, (0, HD), l, in_buf=b["qkv"],
                           aux_buf=b["kv_cache"], out_buf=b["attn"], weight2=t_rope,
                           slot=ch, param0=kv, param1=C, param2=attention_min_chunk)
                     for kv in range(NKV) for ch in range(C)])
        w += 1
        add_wave(l, [_task("ATTN_OUT", w, i, (a, e), l, in_buf=b["attn"], aux_buf=b["x0"],
                           out_buf=b["x1"], weight=lt["wo"], param1=C)
                     for i, a, e in split_rows(H, parts["attn_out_parts"])])
        w += 1
        add_wave(l, [_task("FFN", w, i, (a, e), l, in_buf=b["x1"], out_buf=b["x0"],
                           weight=lt["w_gate"], weight2=lt["w_up"], weight3=lt["w_down_t"],
                           norm=lt["ffn_norm"], slot=s)
                     for s, (i, a, e) in enumerate(ffn_split)])
    w += 1
    add_wave(NONE_ID, [_task("LM_HEAD", w, i, (a, e), in_buf=b["x0"], out_buf=b["logits"],
                             aux_buf=b["cand"], weight=t_lm_head, norm=t_final_norm, slot=s)
                       for s, (i, a, e) in enumerate(lm_split)])

    params = dict(
        workers=W, waves=len(waves), tasks=len(tasks), max_context=max_context,
        attention_chunks=C, attention_min_chunk=attention_min_chunk, ffn_parts=ffn_parts,
        lm_head_slots=lm_slots, buffers=b,
        tensors=dict(embed=t_embed, rope_inv_freq=t_rope),
    )
    return Plan(config=config, target=target, max_context=max_context, tensors=tensors,
                buffers=buffers, waves=waves, tasks=tasks, params=params,
                weights_bytes=weights_bytes)


def tasks_by_wave_kind(plan) -> List[Tuple[str, int]]:
    """[(kind, tasks)] for the first wave of each kind (EMBED, QKV, ATTENTION, ATTN_OUT, FFN,
    LM_HEAD; QKV is opcode RMSNORM_GEMV), in execution order: the planner's summary."""
    seen = {}
    for wave in plan.waves:
        op = OPCODE_NAMES[plan.tasks[wave["first_task"]]["opcode"]]
        seen.setdefault("QKV" if op == "RMSNORM_GEMV" else op, wave["task_count"])
    return list(seen.items())


# --- bytes ----------------------------------------------------------------------------------

def tensor_bytes(t: dict) -> int:
    """Bytes of one tensor record: rows * cols * element size."""
    return t["rows"] * t["cols"] * spec.DTYPE_BYTES[_DTYPE_NAMES[t["dtype"]]]


_DTYPE_NAMES = {v: k for k, v in DT.items()}


def task_weight_bytes(task: dict, tensors: List[dict]) -> int:
    """Bytes of weight matrices one task streams: its rows x full width of each matrix.

    Counts weight, weight2 and weight3 for the row-streaming opcodes (WEIGHT_OPCODES); norm
    vectors are re-read by every task of a wave, the same for all, and left out. Other
    opcodes stream no weight matrix: 0.
    """
    if OPCODE_NAMES.get(task["opcode"]) not in WEIGHT_OPCODES:
        return 0
    rows = task["row_end"] - task["row_begin"]
    total = 0
    for f in ("weight", "weight2", "weight3"):
        if task[f] != NONE_ID:
            t = tensors[task[f]]
            total += rows * t["cols"] * spec.DTYPE_BYTES[_DTYPE_NAMES[t["dtype"]]]
    return total


class WaveBalance(NamedTuple):
    """Bytes streamed per worker in one weight wave (idle workers count as 0 bytes)."""
    wave: int
    opcode: str
    min_bytes: int
    max_bytes: int
    mean_bytes: float
    spread: float  # (max - min) / mean


def byte_balance(plan) -> List[WaveBalance]:
    """Per weight wave (WEIGHT_OPCODES), the spread of bytes over all W workers.

    Works on a Plan or anything with .tasks/.tensors/.waves lists of dicts and
    .params["workers"] (a PackageView). Returns one WaveBalance per weight wave, in wave
    order.
    """
    W = plan.params["workers"]
    out = []
    for wi, wave in enumerate(plan.waves):
        wt = plan.tasks[wave["first_task"]:wave["first_task"] + wave["task_count"]]
        if not wt or OPCODE_NAMES.get(wt[0]["opcode"]) not in WEIGHT_OPCODES:
            continue
        per_worker = [0] * W
        for t in wt:
            per_worker[t["worker"]] += task_weight_bytes(t, plan.tensors)
        lo, hi = min(per_worker), max(per_worker)
        mean = sum(per_worker) / W
        out.append(WaveBalance(wi, OPCODE_NAMES[wt[0]["opcode"]], lo, hi, mean,
                               (hi - lo) / mean if mean else 0.0))
    return out


def format_balance(rows: List[WaveBalance]) -> str:
    """A table of byte_balance rows; waves with identical numbers (every layer's QKV...) are
    folded into one line with their count."""
    groups = collections.OrderedDict()
    for r in rows:
        key = (r.opcode, r.min_bytes, r.max_bytes, r.mean_bytes)
        groups.setdefault(key, []).append(r)
    lines = [f"{'opcode':<13}{'waves':>6}{'min B':>12}{'max B':>12}{'mean B':>14}"
             f"{'spread':>9}"]
    for (op, lo, hi, mean), rs in groups.items():
        lines.append(f"{op:<13}{len(rs):>6}{lo:>12,}{hi:>12,}{mean:>14,.1f}"
                     f"{100 * rs[0].spread:>8.2f}%")
    return "\n".join(lines)


def streamed_bytes_per_token(plan) -> int:
    """Weight bytes one token reads from memory (K/V cache excluded).

    Every matrix and vector once, except an untied embedding table, of which EMBED reads
    one row. (Llama-3.2-1B, tied: 2,471,628,800.)
    """
    embed = plan.params["tensors"]["embed"]
    lm_head_untied = any(t["name"] == "lm_head" for t in plan.tensors)
    total = 0
    for i, t in enumerate(plan.tensors):
        if i == embed and lm_head_untied:
            total += t["cols"] * spec.DTYPE_BYTES[_DTYPE_NAMES[t["dtype"]]]
        else:
            total += tensor_bytes(t)
    return total


def kv_bytes_per_position(config: LlamaConfig) -> int:
    """K/V cache bytes attention reads per context position: layers * 2 * KV * 2 (BF16)."""
    return config.num_layers * 2 * config.num_kv_heads * config.head_dim * 2


def floor_ms_per_token(plan, bandwidth_gbps: float, context: int = 1) -> float:
    """Time to stream one token's bytes at `bandwidth_gbps` (1e9 B/s), in ms: the floor."""
    b = streamed_bytes_per_token(plan) + context * kv_bytes_per_position(plan.config)
    return b / (bandwidth_gbps * 1e9) * 1e3
