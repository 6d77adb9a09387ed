"""Checks that a plan (or a package read back) is safe to execute, before any GPU runs it.

The runtime (host/, C++) repeats these checks on load; `task_access` is written to be
mirrored line for line there. A plan passes when:

  * tables: every id in range, names unique and NUL-terminable, tensors TENSOR_ALIGN aligned,
    inside the weights section and not overlapping; meta["plan"] agrees with the tables;
  * structure: waves in format order (EMBED, 4 per layer, LM_HEAD), each of one opcode and
    layer; wave records tile the task list; tasks sorted by (wave, worker); worker < W;
  * operands: each opcode uses exactly its fields (unused ids NONE_ID, unused numbers 0), with
    the right buffer kinds/dtypes and consistent shapes; rows inside the opcode's row space;
  * dataflow, per barrier epoch (waves up to and including one ending in a grid barrier;
    a SYNC_NONE wave joins the next), checked at several token positions:
      - every element range a task touches (task_access) is inside its buffer;
      - one writer per element per epoch; no task reads what another writes in its epoch;
      - elements several tasks add to (task_accumulates: FFN into x0) are neither read nor
        written by any task of that epoch, and were written in an earlier one;
      - every ACTIVATION read was written in an earlier epoch of the same token (K/V cache
        reads of earlier positions and CANDIDATES persist across tokens and are exempt);
      - K/V cache row `pos` of every layer, K and V, every head, is written exactly once, by
        the last attention chunk of its head; every LM_HEAD candidate slot is written once;
        LM_HEAD rows cover the vocabulary, FFN slots cover [0, ffn_parts), ffn_parts <=
        FFN_MAX_PARTS (the fixed-point residual's headroom).

Errors are PlanError; messages name the task index, opcode, wave and worker and the rule.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from planner import format_spec as spec

NONE_ID = spec.NONE_ID
OP = spec.OPCODES
OPCODE_NAMES = {v: k for k, v in OP.items()}
KIND_NAMES = {v: k for k, v in spec.BUFFER_KINDS.items()}
DTYPE_NAMES = {v: k for k, v in spec.DTYPES.items()}
SYNC_NAMES = {v: k for k, v in spec.SYNC.items()}

_ID_FIELDS = ("in_buf", "aux_buf", "out_buf", "weight", "weight2", "weight3", "norm")
_NUM_FIELDS = ("slot", "param0", "param1", "param2")
_BUF_FIELDS = ("in_buf", "aux_buf", "out_buf")

# Fields each opcode uses (format_spec docstring); every other id is NONE_ID, number 0.
USES = {
    "EMBED": ({"out_buf", "weight"}, set()),
    "RMSNORM_GEMV": ({"in_buf", "out_buf", "weight", "norm"}, set()),
    "ATTENTION": ({"in_buf", "aux_buf", "out_buf", "weight2"},
                  {"slot", "param0", "param1", "param2"}),
    "ATTN_OUT": ({"in_buf", "aux_buf", "out_buf", "weight"}, {"param1"}),
    "FFN": ({"in_buf", "out_buf", "weight", "weight2", "weight3", "norm"}, {"slot"}),
    "LM_HEAD": ({"in_buf", "aux_buf", "out_buf", "weight", "norm"}, {"slot"}),
}
LAYER_OPCODES = ("RMSNORM_GEMV", "ATTENTION", "ATTN_OUT", "FFN")


class PlanError(ValueError):
    """A plan or package that must not run; the message names the task/wave and the rule."""


@dataclasses.dataclass(frozen=True)
class AccessContext:
    """Model dimensions task_access needs, and the token position to evaluate at.

    H hidden, F FFN width, V vocab, L layers, NH/NKV query/KV heads, HD head_dim,
    max_context K/V cache positions, pos the token position (0-based, < max_context).
    """
    H: int
    F: int
    V: int
    L: int
    NH: int
    NKV: int
    HD: int
    max_context: int
    pos: int

    @property
    def Q(self) -> int:
        return self.NH * self.HD

    @property
    def KV(self) -> int:
        return self.NKV * self.HD

    @classmethod
    def from_model(cls, model: dict, max_context: int, pos: int) -> "AccessContext":
        return cls(H=model["hidden_size"], F=model["intermediate_size"],
                   V=model["vocab_size"], L=model["num_layers"], NH=model["num_heads"],
                   NKV=model["num_kv_heads"], HD=model["head_dim"],
                   max_context=max_context, pos=pos)


Range = Tuple[int, int, int]  # (buffer id, begin element, end element), end exclusive


def attention_chunk(ctx_len: int, n_chunks: int, chunk: int, min_chunk: int) -> Tuple[int, int]:
    """Positions [lo, hi) of `chunk` of `n_chunks` at context length ctx_len (format_spec):
    S = max(ceil(ctx/C), min_chunk); chunk c covers
    [max(0, ctx-(C-c)*S), max(0, ctx-(C-1-c)*S)). The last chunk always holds pos = ctx-1.
    """
    s = max(-(-ctx_len // n_chunks), min_chunk)
    return (max(0, ctx_len - (n_chunks - chunk) * s),
            max(0, ctx_len - (n_chunks - 1 - chunk) * s))


def task_access(task: dict, ctx: AccessContext) -> Tuple[List[Range], List[Range]]:
    """Element ranges of buffers one task reads and writes at token position ctx.pos.

    Mirrored by the C++ validator. Ranges may be empty (begin == end). Assumes the task's
    fields were checked (opcode valid, C >= 1). Weights are not buffers and are not listed.

      EMBED         reads -                    writes out[a,b)
      RMSNORM_GEMV  reads in[0,H)              writes out[a,b)
      ATTENTION     kv head g, chunk c of C, group G = NH/NKV, heads g*G .. (g+1)*G-1:
                    reads in[g*G*HD, (g+1)*G*HD) (its q); the last chunk also in[Q+g*HD,+HD)
                    (k) and in[Q+KV+g*HD,+HD) (v); cache: positions [lo, min(hi, pos)) of its
                    chunk, as one bounding range per K and V: [base + lo*KV + g*HD,
                    base + (hi'-1)*KV + (g+1)*HD), base = (layer*2 + {0: K, 1: V}) *
                    max_context*KV (elements of other heads inside it are not read; the range
                    ends before row pos, so it never meets this token's writes);
                    writes out[(c*NH + g*G)*(HD+2), (c*NH + (g+1)*G)*(HD+2)); the last chunk
                    also aux[base + pos*KV + g*HD, +HD) for K and for V.
      ATTN_OUT      reads in[0, C*NH*(HD+2)) (C = param1), aux[a,b)
                    writes out[a,b), aux[a,b)   (x1, and x0 = fix(x1) in place)
      FFN           reads in[0,H)              writes -   (accumulates out[0,H): task_accumulates)
      LM_HEAD       reads in[0,H)              writes out[a,b), aux[slot, slot+1)
    """
    op = OPCODE_NAMES[task["opcode"]]
    a, b = task["row_begin"], task["row_end"]
    i, x, o = task["in_buf"], task["aux_buf"], task["out_buf"]
    H = ctx.H
    if op == "EMBED":
        return [], [(o, a, b)]
    if op == "RMSNORM_GEMV":
        return [(i, 0, H)], [(o, a, b)]
    if op == "ATTENTION":
        g, C, c, min_chunk = task["param0"], task["param1"], task["slot"], task["param2"]
        HD, Q, KV, NH = ctx.HD, ctx.Q, ctx.KV, ctx.NH
        G = ctx.NH // ctx.NKV
        last = c == C - 1
        reads = [(i, g * G * HD, (g + 1) * G * HD)]
        writes = [(o, (c * NH + g * G) * (HD + 2), (c * NH + (g + 1) * G) * (HD + 2))]
        if last:
            reads += [(i, Q + g * HD, Q + (g + 1) * HD), (i, Q + KV + g * HD, Q + KV + (g + 1) * HD)]
        lo, hi = attention_chunk(ctx.pos + 1, C, c, min_chunk)
        hi = min(hi, ctx.pos)  # row pos comes from qkv, not from the cache
        for kv in (0, 1):
            base = (task["layer"] * 2 + kv) * ctx.max_context * KV
            if hi > lo:
                reads.append((x, base + lo * KV + g * HD, base + (hi - 1) * KV + (g + 1) * HD))
            if last:
                writes.append((x, base + ctx.pos * KV + g * HD, base + ctx.pos * KV + (g + 1) * HD))
        return reads, writes
    if op == "ATTN_OUT":
        return [(i, 0, task["param1"] * ctx.NH * (ctx.HD + 2)), (x, a, b)], [(o, a, b), (x, a, b)]
    if op == "FFN":
        return [(i, 0, H)], []
    if op == "LM_HEAD":
        s = task["slot"]
        return [(i, 0, H)], [(o, a, b), (x, s, s + 1)]
    raise AssertionError(op)


def task_accumulates(task: dict, ctx: AccessContext) -> List[Range]:
    """Element ranges one task adds to with integer adds (format_spec: FFN into x0): the one
    access several tasks of a barrier epoch may share, provided none of them reads or writes
    those elements in it. Mirrored by the C++ validator.

      FFN           out[0,H)
      (others)      -
    """
    if OPCODE_NAMES[task["opcode"]] == "FFN":
        return [(task["out_buf"], 0, ctx.H)]
    return []


# --- input normalisation --------------------------------------------------------------------

@dataclasses.dataclass
class _Parts:
    model: dict
    params: dict
    target: dict
    tensors: List[dict]
    buffers: List[dict]
    waves: List[dict]
    tasks: List[dict]
    weights_bytes: int


def _parts(obj) -> _Parts:
    """A Plan or a PackageView as one shape (both hold records as dicts, names as str)."""
    if hasattr(obj, "meta"):  # PackageView
        meta = obj.meta
        for key in ("model", "plan", "target"):
            if not isinstance(meta.get(key), dict):
                raise PlanError(f"meta[{key!r}] is missing or not an object")
        return _Parts(meta["model"], meta["plan"], meta["target"], obj.tensors, obj.buffers,
                      obj.waves, obj.tasks, obj.weights_bytes)
    return _Parts(obj.config.to_json(), obj.params, obj.target.meta_json(), obj.tensors,
                  obj.buffers, obj.waves, obj.tasks, obj.weights_bytes)


def _where(index: int, t: dict) -> str:
    op = OPCODE_NAMES.get(t["opcode"], f"opcode {t['opcode']}")
    return f"task {index} ({op}, wave {t['wave']}, worker {t['worker']})"


# --- checks ---------------------------------------------------------------------------------

def _check_name(where: str, name: str, limit: int, seen: set) -> None:
    """A table entry's name: non-empty, under `limit` bytes (UTF-8), not in `seen` (added)."""
    if not name or len(name.encode()) >= limit or name in seen:
        raise PlanError(f"{where}: name must be unique, non-empty, < {limit} bytes")
    seen.add(name)


def _check_tables(p: _Parts) -> None:
    seen = set()
    spans = []
    for n, t in enumerate(p.tensors):
        where = f"tensor {n} ({t['name']!r})"
        _check_name(where, t["name"], spec.NAME_BYTES_TENSOR, seen)
        if t["dtype"] not in (spec.DTYPES["BF16"], spec.DTYPES["F32"]):
            raise PlanError(f"{where}: dtype {t['dtype']} is not BF16 or F32")
        if t["rows"] < 1 or t["cols"] < 1 or t["reserved"] != 0:
            raise PlanError(f"{where}: rows={t['rows']} cols={t['cols']} must be >= 1, "
                            f"reserved must be 0")
        if t["offset"] % spec.TENSOR_ALIGN:
            raise PlanError(f"{where}: offset {t['offset']} is not a multiple of "
                            f"TENSOR_ALIGN={spec.TENSOR_ALIGN}")
        end = t["offset"] + t["rows"] * t["cols"] * spec.DTYPE_BYTES[DTYPE_NAMES[t["dtype"]]]
        if end > p.weights_bytes:
            raise PlanError(f"{where}: bytes [{t['offset']}, {end}) run past the weights "
                            f"section ({p.weights_bytes} bytes)")
        spans.append((t["offset"], end, n))
    spans.sort()
    for (a0, e0, n0), (a1, e1, n1) in zip(spans, spans[1:]):
        if a1 < e0:
            raise PlanError(f"tensors {n0} ({p.tensors[n0]['name']}) and {n1} "
                            f"({p.tensors[n1]['name']}) overlap in the weights section")
    seen = set()
    for n, b in enumerate(p.buffers):
        where = f"buffer {n} ({b['name']!r})"
        _check_name(where, b["name"], spec.NAME_BYTES_BUFFER, seen)
        if b["kind"] not in KIND_NAMES or b["dtype"] not in DTYPE_NAMES or b["elements"] < 1:
            raise PlanError(f"{where}: kind {b['kind']}, dtype {b['dtype']}, elements "
                            f"{b['elements']}: invalid")


def _check_params(p: _Parts) -> None:
    pr, m, tg = p.params, p.model, p.target
    need = ("workers", "waves", "tasks", "max_context", "attention_chunks",
            "attention_min_chunk", "ffn_parts", "lm_head_slots", "buffers", "tensors")
    missing = [k for k in need if k not in pr]
    if missing:
        raise PlanError(f"meta['plan'] is missing {missing}")
    if not (isinstance(pr["workers"], int)
            and 1 <= pr["workers"] <= tg["sm_count"] * tg["workers_per_sm"]):
        raise PlanError(f"plan workers={pr['workers']} but the target has "
                        f"{tg['sm_count']} SMs x {tg['workers_per_sm']} workers/SM: a plan "
                        f"uses 1 to {tg['sm_count'] * tg['workers_per_sm']} workers")
    if pr["waves"] != len(p.waves) or pr["tasks"] != len(p.tasks):
        raise PlanError(f"meta says {pr['waves']} waves / {pr['tasks']} tasks, the tables "
                        f"hold {len(p.waves)} / {len(p.tasks)}")
    for key in ("max_context", "attention_chunks", "attention_min_chunk", "ffn_parts",
                "lm_head_slots"):
        if not isinstance(pr[key], int) or pr[key] < 1:
            raise PlanError(f"meta['plan'][{key!r}]={pr[key]!r} must be a positive int")
    for key, limit in spec.META_LIMITS.items():  # what host/package.cc takes
        section, name = key.split(".")
        value = (m if section == "model" else pr).get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > limit:
            raise PlanError(f"meta value {key} = {value} is beyond the runtime's limit of {limit}")
    if pr["max_context"] < 2:  # make_plan's rule: one prompt token and one new one at least
        raise PlanError(f"meta['plan']['max_context']={pr['max_context']} leaves no position for a "
                        f"new token after the prompt's first; re-plan with --max_context=2 or more")
    for name, bid in pr["buffers"].items():
        if not 0 <= bid < len(p.buffers) or p.buffers[bid]["name"] != name:
            raise PlanError(f"meta['plan']['buffers'][{name!r}]={bid} is not the buffer "
                            f"named {name!r}")
    if pr["ffn_parts"] > spec.FFN_MAX_PARTS:
        raise PlanError(f"meta['plan']['ffn_parts']={pr['ffn_parts']}: the fixed-point "
                        f"residual takes at most {spec.FFN_MAX_PARTS} FFN parts (re-plan "
                        f"with fewer workers)")
    for name in ("x0", "x1", "qkv", "attn", "logits", "cand", "kv_cache"):
        if name not in pr["buffers"]:
            raise PlanError(f"meta['plan']['buffers'] has no {name!r}")
    for name in ("embed", "rope_inv_freq"):
        if name not in pr["tensors"]:
            raise PlanError(f"meta['plan']['tensors'] has no {name!r}")
    for name, tid in pr["tensors"].items():
        if not 0 <= tid < len(p.tensors) or p.tensors[tid]["name"] != name:
            raise PlanError(f"meta['plan']['tensors'][{name!r}]={tid} is not the tensor "
                            f"named {name!r}")
    kv = p.buffers[pr["buffers"]["kv_cache"]]
    want = m["num_layers"] * 2 * pr["max_context"] * m["num_kv_heads"] * m["head_dim"]
    if kv["elements"] != want:
        raise PlanError(f"kv_cache holds {kv['elements']} elements, layers*2*max_context*KV "
                        f"= {want}")
    cand = p.buffers[pr["buffers"]["cand"]]
    if cand["elements"] != pr["lm_head_slots"]:
        raise PlanError(f"cand holds {cand['elements']} slots, meta lm_head_slots = "
                        f"{pr['lm_head_slots']}")


def _expected_waves(L: int) -> List[Tuple[str, int]]:
    seq = [("EMBED", NONE_ID)]
    for l in range(L):
        seq += [(op, l) for op in LAYER_OPCODES]
    return seq + [("LM_HEAD", NONE_ID)]


def _check_structure(p: _Parts) -> None:
    L, W = p.model["num_layers"], p.params["workers"]
    expected = _expected_waves(L)
    if len(p.waves) != len(expected):
        raise PlanError(f"{len(p.waves)} waves; a plan of {L} layers has 4*{L}+2 = "
                        f"{len(expected)}")
    nxt = 0
    for wi, (wave, (op, layer)) in enumerate(zip(p.waves, expected)):
        if wave["first_task"] != nxt or wave["task_count"] < 1:
            raise PlanError(f"wave {wi}: first_task={wave['first_task']} task_count="
                            f"{wave['task_count']}; expected first_task={nxt} and >= 1 task "
                            f"(wave records must tile the task list in order)")
        nxt += wave["task_count"]
        if nxt > len(p.tasks):
            raise PlanError(f"wave {wi}: tasks [{wave['first_task']}, {nxt}) run past the "
                            f"{len(p.tasks)} tasks")
        if wave["sync"] not in SYNC_NAMES:
            raise PlanError(f"wave {wi}: sync={wave['sync']} is not one of {spec.SYNC}")
        if wave["layer"] != layer:
            raise PlanError(f"wave {wi}: layer={wave['layer']}, expected "
                            f"{'NONE_ID' if layer == NONE_ID else layer} ({op} wave)")
        prev_worker = -1
        for ti in range(wave["first_task"], nxt):
            t = p.tasks[ti]
            if t["opcode"] not in OPCODE_NAMES:
                raise PlanError(f"{_where(ti, t)}: opcode {t['opcode']} is not one of "
                                f"{sorted(OP.values())}")
            if OPCODE_NAMES[t["opcode"]] != op:
                raise PlanError(f"{_where(ti, t)}: wave {wi} is a {op} wave (EMBED, 4 per "
                                f"layer, LM_HEAD)")
            if t["wave"] != wi:
                raise PlanError(f"{_where(ti, t)}: lies in wave {wi}'s task range but says "
                                f"wave {t['wave']} (tasks must be sorted by wave)")
            if t["layer"] != (0 if layer == NONE_ID else layer):
                raise PlanError(f"{_where(ti, t)}: layer {t['layer']} in a wave of layer "
                                f"{layer if layer != NONE_ID else 'NONE (task layer 0)'}")
            if not t["worker"] < W:
                raise PlanError(f"{_where(ti, t)}: worker {t['worker']} >= {W} workers")
            if t["worker"] < prev_worker:
                raise PlanError(f"{_where(ti, t)}: tasks of a wave must be sorted by worker")
            prev_worker = t["worker"]
    if nxt != len(p.tasks):
        raise PlanError(f"waves cover {nxt} tasks, the table holds {len(p.tasks)}")
    if p.waves[-1]["sync"] != spec.SYNC["SYNC_GRID_BARRIER"]:
        raise PlanError(f"wave {len(p.waves) - 1} (last): must end in a grid barrier (the "
                        f"next token's selection reads its candidates)")


def _check_operands(p: _Parts) -> None:
    m, pr = p.model, p.params
    H, F, V = m["hidden_size"], m["intermediate_size"], m["vocab_size"]
    NH, NKV, HD = m["num_heads"], m["num_kv_heads"], m["head_dim"]
    Q, KV = NH * HD, NKV * HD
    row_space = {"EMBED": H, "RMSNORM_GEMV": Q + 2 * KV, "ATTENTION": HD, "ATTN_OUT": H,
                 "FFN": F, "LM_HEAD": V}
    act = spec.BUFFER_KINDS["ACTIVATION"]
    f32, bf16, fixed = spec.DTYPES["F32"], spec.DTYPES["BF16"], spec.DTYPES["FIXED64"]
    # (field, kind, dtype) of each buffer operand, by opcode; others ACTIVATION F32.
    buf_kinds = {
        "EMBED": {"out_buf": (act, fixed)},
        "RMSNORM_GEMV": {"in_buf": (act, fixed)},
        "ATTENTION": {"aux_buf": (spec.BUFFER_KINDS["KV_CACHE"], bf16)},
        "ATTN_OUT": {"aux_buf": (act, fixed)},
        "FFN": {"out_buf": (act, fixed)},
        "LM_HEAD": {"in_buf": (act, fixed),
                    "aux_buf": (spec.BUFFER_KINDS["CANDIDATES"], spec.DTYPES["CANDIDATE"])},
    }
    # Expected (rows, cols, dtype) of tensor operands, by opcode and field.
    shapes = {
        "EMBED": {"weight": (V, H, bf16)},
        "RMSNORM_GEMV": {"weight": (Q + 2 * KV, H, bf16), "norm": (H, 1, bf16)},
        "ATTENTION": {"weight2": (HD // 2, 1, f32)},
        "ATTN_OUT": {"weight": (H, Q, bf16)},
        "FFN": {"weight": (F, H, bf16), "weight2": (F, H, bf16), "weight3": (F, H, bf16),
                "norm": (H, 1, bf16)},
        "LM_HEAD": {"weight": (V, H, bf16), "norm": (H, 1, bf16)},
    }
    # Exact element counts of each buffer operand, by opcode (host/validate.cc checks the same).
    C, L = pr["attention_chunks"], m["num_layers"]
    attn_out = C * NH * (HD + 2)
    buf_elements = {
        "EMBED": {"out_buf": H},
        "RMSNORM_GEMV": {"in_buf": H, "out_buf": Q + 2 * KV},
        "ATTENTION": {"in_buf": Q + 2 * KV, "aux_buf": L * 2 * pr["max_context"] * KV,
                      "out_buf": attn_out},
        "ATTN_OUT": {"in_buf": attn_out, "aux_buf": H, "out_buf": H},
        "FFN": {"in_buf": H, "out_buf": H},
        "LM_HEAD": {"in_buf": H, "out_buf": V, "aux_buf": pr["lm_head_slots"]},
    }
    used_buffers = set()
    attn_seen: Dict[int, set] = {}
    ffn_slots: Dict[int, List[int]] = {}
    # Row ranges of the row-split waves, which must cover their row space exactly once: a row
    # left out would keep a stale value (x0's rows keep adding up across layers).
    row_ranges: Dict[int, List[Tuple[int, int, int]]] = {}
    lm_slots: List[int] = []
    lm_rows = 0
    for ti, t in enumerate(p.tasks):
        op = OPCODE_NAMES[t["opcode"]]
        where = _where(ti, t)
        ids, nums = USES[op]
        if t["reserved0"] or t["reserved1"]:
            raise PlanError(f"{where}: reserved fields must be 0")
        for f in _ID_FIELDS:
            if f in ids:
                if t[f] == NONE_ID:
                    raise PlanError(f"{where}: {f} is NONE_ID; {op} needs it")
                limit = len(p.buffers) if f in _BUF_FIELDS else len(p.tensors)
                if not t[f] < limit:
                    kind = "buffer" if f in _BUF_FIELDS else "tensor"
                    raise PlanError(f"{where}: {f}={t[f]} is not a {kind} id (< {limit})")
            elif t[f] != NONE_ID:
                raise PlanError(f"{where}: {f}={t[f]}; {op} does not use it (NONE_ID)")
        for f in _NUM_FIELDS:
            if f not in nums and t[f] != 0:
                raise PlanError(f"{where}: {f}={t[f]}; {op} does not use it (0)")
        if not t["row_begin"] < t["row_end"] <= row_space[op]:
            raise PlanError(f"{where}: rows [{t['row_begin']}, {t['row_end']}) must be a "
                            f"non-empty range inside [0, {row_space[op]})")
        for f in _BUF_FIELDS:
            if f in ids:
                used_buffers.add(t[f])
                kind, dtype = buf_kinds.get(op, {}).get(f, (act, f32))
                buf = p.buffers[t[f]]
                if (buf["kind"], buf["dtype"]) != (kind, dtype):
                    raise PlanError(
                        f"{where}: {f} is buffer {buf['name']!r} ({KIND_NAMES[buf['kind']]} "
                        f"{DTYPE_NAMES[buf['dtype']]}); {op} needs {KIND_NAMES[kind]} "
                        f"{DTYPE_NAMES[dtype]}")
                want = buf_elements[op][f]
                if buf["elements"] != want:
                    raise PlanError(f"{where}: {f} is buffer {buf['name']!r} of {buf['elements']} "
                                    f"elements; {op} needs {want}")
        for f, (rows, cols, dtype) in shapes.get(op, {}).items():
            ten = p.tensors[t[f]]
            if (ten["rows"], ten["cols"], ten["dtype"]) != (rows, cols, dtype):
                raise PlanError(
                    f"{where}: {f} is tensor {ten['name']!r} ({ten['rows']}, {ten['cols']}) "
                    f"{DTYPE_NAMES[ten['dtype']]}; {op} needs ({rows}, {cols}) "
                    f"{DTYPE_NAMES[dtype]}")
            # Catches a plan that wires one layer's weights into another layer.
            name = ten["name"]
            if op in LAYER_OPCODES and op != "ATTENTION":  # its RoPE table is shared
                if not name.startswith(f"layers.{t['layer']}."):
                    raise PlanError(f"{where}: {f} is tensor {name!r}, not one of layer "
                                    f"{t['layer']}'s")
        if op in ("EMBED", "RMSNORM_GEMV", "ATTN_OUT", "FFN"):
            row_ranges.setdefault(t["wave"], []).append((t["row_begin"], t["row_end"], ti))
        if op == "ATTENTION":
            C = t["param1"]
            if C != pr["attention_chunks"] or t["param2"] != pr["attention_min_chunk"]:
                raise PlanError(f"{where}: n_chunks={C} min_chunk={t['param2']}, meta says "
                                f"{pr['attention_chunks']} / {pr['attention_min_chunk']}")
            if not (t["param0"] < NKV and t["slot"] < C):
                raise PlanError(f"{where}: kv_head={t['param0']} chunk={t['slot']} must be "
                                f"< {NKV} heads / {C} chunks")
            key = (t["param0"], t["slot"])
            seen = attn_seen.setdefault(t["wave"], set())
            if key in seen:
                raise PlanError(f"{where}: kv_head {key[0]} chunk {key[1]} is planned twice")
            seen.add(key)
        elif op == "ATTN_OUT":
            if t["param1"] != pr["attention_chunks"]:
                raise PlanError(f"{where}: merges {t['param1']} chunks, meta "
                                f"attention_chunks={pr['attention_chunks']}")
        elif op == "FFN":
            ffn_slots.setdefault(t["wave"], []).append(t["slot"])
        elif op == "LM_HEAD":
            lm_slots.append(t["slot"])
            lm_rows += t["row_end"] - t["row_begin"]
    for wave, seen in attn_seen.items():
        if len(seen) != NKV * pr["attention_chunks"]:
            raise PlanError(f"wave {wave}: {len(seen)} attention tasks, need every kv head x "
                            f"chunk = {NKV} x {pr['attention_chunks']}")
    for wave, slots in ffn_slots.items():
        if sorted(slots) != list(range(pr["ffn_parts"])):
            raise PlanError(f"wave {wave}: FFN slots {sorted(slots)[:8]}... must be each of "
                            f"0..{pr['ffn_parts'] - 1} once")
    if sorted(lm_slots) != list(range(pr["lm_head_slots"])):
        raise PlanError(f"LM_HEAD slots must be each of 0..{pr['lm_head_slots'] - 1} once "
                        f"(every candidate slot written), got {len(lm_slots)} tasks")
    if lm_rows != V:
        raise PlanError(f"LM_HEAD tasks cover {lm_rows} rows, the vocabulary has {V}")
    for bid, buf in enumerate(p.buffers):
        if bid not in used_buffers:
            raise PlanError(f"buffer {bid} {buf['name']!r} is not an operand of any task "
                            f"(a leftover of another plan: re-run the planner)")
    for wave, ranges in row_ranges.items():
        ranges.sort()
        ti = ranges[0][2]
        op = OPCODE_NAMES[p.tasks[ti]["opcode"]]
        end = 0
        for a, b, ti in ranges:
            # Rows twice: the dataflow rules name the two writers, except in an FFN wave,
            # whose tasks add to x0 (a part added twice), so that wave is checked here.
            if a > end or (a < end and op == "FFN"):
                what = f"[{end}, {a}) are in no task" if a > end else f"[{a}, {end}) are in two tasks"
                raise PlanError(f"{_where(ti, p.tasks[ti])}: rows {what} of wave {wave}: the tasks "
                                f"of a {op} wave cover its {row_space[op]} rows exactly once")
            end = max(end, b)
        if end != row_space[op]:
            raise PlanError(f"wave {wave}: rows [{end}, {row_space[op]}) are in no task: the "
                            f"tasks of a {op} wave cover its {row_space[op]} rows exactly once")


def _epochs(p: _Parts) -> List[List[int]]:
    """Task indices per barrier epoch: waves up to one ending in a grid barrier."""
    epochs, cur = [], []
    for wave in p.waves:
        cur.extend(range(wave["first_task"], wave["first_task"] + wave["task_count"]))
        if wave["sync"] != spec.SYNC["SYNC_NONE"]:  # SYNC_NONE: races with the next wave
            epochs.append(cur)
            cur = []
    return epochs


def _first_gap(written: np.ndarray, a: int, b: int) -> Tuple[int, int]:
    """The first run of unwritten elements in [a, b) (the caller knows there is one)."""
    g = a + int(np.argmin(written[a:b]))
    rest = written[g:b]
    return g, g + (int(np.argmax(rest)) if rest.any() else len(rest))


def _check_dataflow(p: _Parts, positions: Sequence[int]) -> None:
    """Bounds, one writer per element per epoch, no read of a same-epoch write, reads of
    ACTIVATION elements written earlier in the token, K/V row pos written once; at each pos.
    Accumulated elements (task_accumulates: several adders an epoch) must not be read or
    written by any task of the same epoch, and must have been written in an earlier one
    (their starting value).

    Only ATTENTION's K/V cache ranges depend on pos, so the first position checks every
    access and later ones only those. Ranges are checked as numpy arrays of (buffer, begin,
    end, task) rows.
    """
    m, mc = p.model, p.params["max_context"]
    act = spec.BUFFER_KINDS["ACTIVATION"]
    elements = np.array([b["elements"] for b in p.buffers], dtype=np.int64)
    is_act = np.array([b["kind"] == act for b in p.buffers])
    attention = OP["ATTENTION"]
    epochs = _epochs(p)
    attention_epochs = [[ti for ti in e if p.tasks[ti]["opcode"] == attention] for e in epochs]
    bname = lambda bid: p.buffers[bid]["name"]

    def rows(ranges_by_task) -> np.ndarray:
        out = [(buf, a, b, ti) for ti, ranges in ranges_by_task for buf, a, b in ranges]
        return np.array(out, dtype=np.int64).reshape(-1, 4)

    for n, pos in enumerate(positions):
        ctx = AccessContext.from_model(m, mc, pos)
        written = {bid: np.zeros(int(elements[bid]), dtype=bool)
                   for bid in range(len(p.buffers)) if is_act[bid]}
        kv_writes = []
        for epoch in (epochs if n == 0 else attention_epochs):
            acc = [(ti, task_access(p.tasks[ti], ctx)) for ti in epoch]
            R = rows((ti, r) for ti, (r, _) in acc)
            Wr = rows((ti, w) for ti, (_, w) in acc)
            A = rows((ti, task_accumulates(p.tasks[ti], ctx)) for ti in epoch)
            if n > 0:  # the first position checked everything that does not move with pos
                R, Wr, A = R[~is_act[R[:, 0]]], Wr[~is_act[Wr[:, 0]]], A[~is_act[A[:, 0]]]
            for what, X in (("reads", R), ("writes", Wr), ("accumulates into", A)):
                bad = np.nonzero((X[:, 1] < 0) | (X[:, 1] > X[:, 2])
                                 | (X[:, 2] > elements[X[:, 0]]))[0]
                if len(bad):
                    buf, a, b, ti = (int(v) for v in X[bad[0]])
                    raise PlanError(f"{_where(ti, p.tasks[ti])}: {what} {bname(buf)}[{a}, {b}) "
                                    f"outside its {elements[buf]} elements (pos {pos})")
            R = R[R[:, 2] > R[:, 1]]
            Wr = Wr[Wr[:, 2] > Wr[:, 1]]
            A = A[A[:, 2] > A[:, 1]]
            for buf in np.unique(A[:, 0]):
                # Accumulated elements: no other access in the epoch (the adds' order is free,
                # so their sum is only final at the barrier).
                added = np.zeros(int(elements[buf]), dtype=np.int64)
                for _, a, b, _ in A[A[:, 0] == buf]:
                    added[a:b] = 1
                cs = np.concatenate(([0], np.cumsum(added)))
                for what, X in (("reads", R), ("writes", Wr)):
                    X = X[X[:, 0] == buf]
                    bad = np.nonzero(cs[X[:, 2]] - cs[X[:, 1]] > 0)[0]
                    if len(bad):
                        _, a, b, ti = (int(v) for v in X[bad[0]])
                        ta = int(A[A[:, 0] == buf][0, 3])
                        raise PlanError(
                            f"{_where(ti, p.tasks[ti])}: {what} {bname(buf)}[{a}, {b}) while "
                            f"{_where(ta, p.tasks[ta])} accumulates into it in the same "
                            f"barrier epoch")
            for buf in np.unique(Wr[:, 0]):
                X = Wr[Wr[:, 0] == buf]
                X = X[np.lexsort((X[:, 2], X[:, 1]))]
                # Sorted by begin: any overlap shows up between neighbours.
                bad = np.nonzero(X[1:, 1] < X[:-1, 2])[0]
                if len(bad):
                    (_, b0, t0), (a1, b1, t1) = X[bad[0], 1:], X[bad[0] + 1, 1:]
                    raise PlanError(
                        f"{_where(int(t1), p.tasks[t1])}: writes {bname(buf)}[{a1}, "
                        f"{min(b0, b1)}) which {_where(int(t0), p.tasks[t0])} also writes in "
                        f"the same barrier epoch (two writers)")
                # Disjoint and sorted: the writes meeting read [a, b) are [lo, hi).
                Y = R[R[:, 0] == buf]
                lo = np.searchsorted(X[:, 2], Y[:, 1], side="right")
                hi = np.searchsorted(X[:, 1], Y[:, 2], side="left")
                for k in np.nonzero(hi > lo)[0]:
                    _, a, b, ti = (int(v) for v in Y[k])
                    for j in range(lo[k], hi[k]):
                        _, wa, wb, wt = (int(v) for v in X[j])
                        if wt != ti:
                            raise PlanError(
                                f"{_where(ti, p.tasks[ti])}: reads {bname(buf)}[{max(a, wa)}, "
                                f"{min(b, wb)}) which {_where(wt, p.tasks[wt])} writes in the "
                                f"same barrier epoch (no barrier between write and read)")
            # Reads of ACTIVATION elements, and the starting values of accumulated ones, must
            # be a write of an earlier epoch (checked after the same-epoch rules, whose
            # message says more when a barrier is missing).
            for what, RA in (("reads", R), ("accumulates into", A)):
                for buf in np.unique(RA[:, 0]):
                    if not is_act[buf]:
                        continue  # K/V cache (earlier positions) and candidates persist
                    X = RA[RA[:, 0] == buf]
                    cs = np.concatenate(([0], np.cumsum(written[buf], dtype=np.int64)))
                    bad = np.nonzero(cs[X[:, 2]] - cs[X[:, 1]] != X[:, 2] - X[:, 1])[0]
                    if len(bad):
                        _, a, b, ti = (int(v) for v in X[bad[0]])
                        g0, g1 = _first_gap(written[buf], a, b)
                        raise PlanError(f"{_where(ti, p.tasks[ti])}: {what} {bname(buf)}[{g0}, "
                                        f"{g1}) before any earlier epoch of this token wrote it "
                                        f"(pos {pos})")
            for buf, a, b, _ in Wr:
                if is_act[buf]:
                    written[buf][a:b] = True
                elif p.buffers[buf]["kind"] == spec.BUFFER_KINDS["KV_CACHE"]:
                    kv_writes.append((int(a), int(b)))
        # K/V cache: this token's row of every layer, K and V, every head, exactly once.
        row = ctx.KV
        want = [((l * 2 + s) * mc + pos) * row for l in range(ctx.L) for s in (0, 1)]
        got = np.zeros(len(want) * row, dtype=np.int64)
        for a, b in kv_writes:
            base = a - a % row
            if base not in want or b > base + row:
                raise PlanError(f"K/V cache elements [{a}, {b}) written at pos {pos}: only row "
                                f"pos of each layer's K and V may be written")
            k = want.index(base) * row
            got[k + a - base:k + b - base] += 1
        if not (got == 1).all():
            i = int(np.argmax(got != 1))
            l, s = divmod(i // row, 2)
            raise PlanError(f"K/V cache: element {i % row} of layer {l} {'KV'[s]} row pos {pos} "
                            f"is written {got[i]} times this token, must be exactly once (the "
                            f"last attention chunk of each head writes it)")


def check_positions(max_context: int, min_chunk: int) -> List[int]:
    """Token positions the dataflow check runs at: both ends and the chunk-size edges."""
    cand = {0, 1, min_chunk - 1, min_chunk, max_context // 2, max_context - 1}
    return sorted(p for p in cand if 0 <= p < max_context)


def check_target(meta_target: dict, target) -> None:
    """Refuses a package planned for another GPU or another build of the worker.

    Args:
      meta_target: the package's meta["target"].
      target: the GPU to run on: a Target or a dict of the same keys (from the probe).
    Raises:
      PlanError saying what differs and to re-plan.
    """
    have = target.meta_json() if hasattr(target, "meta_json") else dict(target)
    diffs = []
    for key in ("name", "compute_capability", "sm_count", "workers_per_sm",
                "worker_fingerprint"):
        a, b = meta_target.get(key), have.get(key)
        if key == "compute_capability":
            a, b = list(a or []), list(b or [])
        if a != b:
            diffs.append(f"{key}: package {a!r}, this GPU {b!r}")
    if diffs:
        hint = ""
        if meta_target.get("worker_fingerprint") == "unprobed":
            hint = (" The package was planned from a target file whose worker was never "
                    "probed;")
        raise PlanError(
            f"package planned for another GPU or worker build ({'; '.join(diffs)}).{hint} "
            f"Re-plan for this GPU: bazel run //py/planner -- --checkpoint=... "
            f"--target=<probed target> --out=...")


def validate_plan(plan_or_package_view, target=None, positions: Optional[Sequence[int]] = None
                  ) -> None:
    """Checks a Plan or a PackageView (module docstring lists the rules).

    Args:
      plan_or_package_view: planner.plan.Plan or planner.package.PackageView.
      target: when given (Target or dict), also check_target against it.
      positions: token positions for the dataflow checks; default check_positions().
    Raises:
      PlanError: the first broken rule.
    """
    p = _parts(plan_or_package_view)
    if target is not None:
        check_target(p.target, target)
    _check_tables(p)
    _check_params(p)
    _check_structure(p)
    _check_operands(p)
    mc = p.params["max_context"]
    if positions is None:
        positions = check_positions(mc, p.params["attention_min_chunk"])
    for pos in positions:
        if not 0 <= pos < mc:
            raise ValueError(f"position {pos} outside [0, max_context={mc})")
    _check_dataflow(p, list(positions))
