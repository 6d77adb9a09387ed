"""Where one token's time goes, from a worker trace (`gpu_check --trace_out`).

Usage: PYTHONPATH=py python3 py/tools/trace_report.py --trace=T.json[.xz|.gz] [--bandwidth_gbps=4540]
           [--png=OUT.png] [--balance_png=OUT.png]

The trace holds, for one step, every task's begin and end and every worker's arrival at and
exit from each grid barrier (%globaltimer, ns). Per wave:
  span     = earliest exit from this wave's barrier - earliest exit from the previous one;
  work     = latest arrival at the barrier - earliest exit from the previous one (the slowest
             worker's tasks plus its own overheads);
  barrier  = span - work (from the last arrival until the first block leaves);
  ideal    = the wave's bytes (weights, or K/V for ATTENTION) / bandwidth (the floor).
The token's time splits into: ideal streaming, weight waves above their ideal ("GEMV below the
roofline"), attention above its ideal, barriers, and the rest (EMBED).
Prints a table per wave kind and the split; --png draws a per-worker timeline and the split;
--balance_png draws the plan's balance: bytes each worker streams in each wave, and per wave
the busiest worker's bytes over the mean (needs matplotlib).

A trace from the phase-trace build (bazel --define=phase_trace=1) also holds "phases_clk":
per task, the SM clocks of marks inside it (cuda/common.cuh PhaseMark). Then two more tables
give, per opcode, the median of each phase's duration over the tasks with every mark, and
over the slowest sixteenth of them (the tasks that set a wave whose other tasks are short),
and the token's split by cause, finer: each weight wave's time above its ideal ("GEMV below
the roofline") cut, on the wave's slowest worker (the last to arrive at its barrier), into its
first-task delay (from its exit from the barrier before to its first task), its tasks' first
phases (the RMSNorm or the attention merge: dependent round trips before the first weight
row is read) and the rest (the rows streaming below the floor's rate, and the worker's own
skew); --png's bar then shows that split in place of the coarser one.
"""
import collections
import gzip
import json
import lzma
import statistics
import sys

from absl import app, flags

from planner import format_spec as spec
from planner.validate import attention_chunk
from tools import plot

FLAGS = flags.FLAGS
flags.DEFINE_string("trace", None, "Trace JSON from gpu_check --trace_out (.xz and .gz accepted).")
flags.DEFINE_float("bandwidth_gbps", 4540.5, "Streaming bandwidth for the ideal time (GB/s; the "
                   "measured floor, results/*/floor.json best_gbps).")
flags.DEFINE_string("png", None, "Write the timeline and the split here (matplotlib).")
flags.DEFINE_string("balance_png", None, "Write bytes per worker per wave here (matplotlib).")

OP = spec.OPCODES
# Wave kinds by opcode (format_spec), as the report names them.
OPCODES = {code: ("QKV (RMSNORM_GEMV)" if name == "RMSNORM_GEMV" else name) for name, code in OP.items()}
# Opcodes of earlier package formats, so that their traces (results/) still read: format 1's
# FFN_REDUCE (a wave that streams no weights, counted in "rest" like EMBED).
OPCODES.update({6: "FFN_REDUCE"})
WEIGHT_KINDS = tuple(OPCODES[OP[n]] for n in ("RMSNORM_GEMV", "ATTN_OUT", "FFN", "LM_HEAD"))
# The phases inside a task, by opcode, as the phase-trace build marks them (PhaseMark calls in
# cuda/op_*.cuh, listed in cuda/common.cuh): phase i runs from mark i - 1 (or the task's
# begin) to mark i (or the task's end), so n phases take marks 0..n-2 of the task's list.
PHASES = {
    OP["ATTENTION"]: ("rope+append", "attend", "merge+write"),
    OP["ATTN_OUT"]: ("merge", "Wo gemv"),
    OP["RMSNORM_GEMV"]: ("norm", "gemv"),
    OP["FFN"]: ("norm", "gate/up", "down"),
    OP["LM_HEAD"]: ("norm", "gemv+argmax"),
}


def open_text(path):
    """The file at `path` opened for reading text; .gz and .xz files are decompressed."""
    opener = gzip.open if path.endswith(".gz") else lzma.open if path.endswith(".xz") else open
    return opener(path, "rt")


def load(path):
    """The trace as a dict (see gpu_check.cc WriteTrace); raises ValueError if it is empty."""
    with open_text(path) as f:
        trace = json.load(f)
    if not any(t[8] for t in trace["tasks"]):
        raise ValueError(f"{path}: no traced task (did the traced step run?)")
    return trace


def task_bytes(trace, t):
    """Bytes task `t` streams: weight rows (BF16), or the K/V of its attention chunk."""
    op, rows = t[2], t[5] - t[4]
    h, q = trace["hidden"], trace["heads"] * trace["head_dim"]
    if op in (OP["RMSNORM_GEMV"], OP["LM_HEAD"]):
        return rows * h * 2
    if op == OP["ATTN_OUT"]:
        return rows * q * 2
    if op == OP["FFN"]:
        return rows * h * 2 * 3
    if op == OP["ATTENTION"]:  # chunk `slot` of `param1` chunks over the context
        begin, end = attention_chunk(trace["context"], t[7], t[6], trace["attention_min_chunk"])
        return (end - begin) * trace["head_dim"] * 2 * 2
    if op == OP["EMBED"]:
        return h * 2
    return 0


def analyse(trace, bandwidth_gbps):
    """Per-wave rows and the token split (all times in microseconds)."""
    waves, workers = trace["waves"], trace["workers"]
    exit_ = [[0] * workers for _ in range(waves)]
    arrive = [[0] * workers for _ in range(waves)]
    for w, v, a, e, _, _ in trace["barriers"]:
        arrive[v][w], exit_[v][w] = a, e
    by_wave = collections.defaultdict(list)
    for t in trace["tasks"]:
        by_wave[t[1]].append(t)
    # v31's traces (results/2026-11-30e-h200-counters): arrival = exit = the worker's end of the wave
    no_barrier = set(trace.get("no_barrier_waves", []))
    # Each task's first phase (us) in a phase trace (phases_clk; see lead_phase_us), else None.
    scale = ns_per_clock(trace) if "phases_clk" in trace else None
    lead_of = {id(t): lead_phase_us(t, marks, scale)
               for t, marks in zip(trace["tasks"], trace.get("phases_clk", []))}
    rows = []
    start = min(t[8] for t in by_wave[0])
    prev = None  # the last wave that ran: a skipped wave has no exit times
    for v in range(waves):
        if not any(exit_[v]):  # skipped wave (LM_HEAD on a step without logits)
            continue
        tasks = by_wave[v]
        kind = OPCODES[tasks[0][2]]
        last_arrival, first_exit = max(arrive[v]), min(exit_[v])
        if v in no_barrier:  # no barrier: the wave ends with its slowest worker, the next starts there
            first_exit = last_arrival
        nbytes = sum(task_bytes(trace, t) for t in tasks)
        # The slowest worker: its wait from the previous exit to its first task.
        slow = max(range(workers), key=lambda w: arrive[v][w])
        mine = [t for t in tasks if t[0] == slow]
        prev_exit = exit_[prev][slow] if prev is not None else start
        rows.append(dict(
            wave=v, kind=kind, span=(first_exit - start) / 1e3, work=(last_arrival - start) / 1e3,
            barrier=(first_exit - last_arrival) / 1e3, ideal=nbytes / bandwidth_gbps / 1e3,
            bytes=nbytes,
            first_task_delay=((min(t[8] for t in mine) - prev_exit) / 1e3) if mine else 0.0,
            task_time=sum(t[9] - t[8] for t in mine) / 1e3,
            task_us=[(t[9] - t[8]) / 1e3 for t in tasks],
            lead=(sum(lead_of[id(t)] for t in mine)
                  if mine and all(lead_of.get(id(t)) is not None for t in mine) else None)))
        start = first_exit
        prev = v
    split = collections.OrderedDict(
        (k, 0.0) for k in ("ideal streaming", "GEMV below the roofline", "attention",
                           "barriers", "rest"))
    for r in rows:
        split["barriers"] += r["barrier"]
        if r["kind"] in WEIGHT_KINDS:
            split["ideal streaming"] += r["ideal"]
            split["GEMV below the roofline"] += r["work"] - r["ideal"]
        elif r["kind"] == "ATTENTION":
            split["ideal streaming"] += r["ideal"]
            split["attention"] += r["work"] - r["ideal"]
        else:
            split["rest"] += r["work"]
    return rows, split


def lead_phase_us(task, marks, scale):
    """Microseconds of `task`'s first phase (PHASES: its RMSNorm, or ATTN_OUT's merge of the
    attention chunks; for ATTENTION rope+append) from its phase marks `marks` at `scale` ns
    per SM clock; None for an opcode without phases, a missing mark or no clock scale."""
    if task[2] not in PHASES or scale is None or not task[10] or not marks or not marks[0]:
        return None
    return (marks[0] - task[10]) * scale / 1e3


# The finer split's parts of a weight wave's time above its ideal, in report order.
GAP_CAUSES = ("first-task delays", "norms and merges before the first weight row",
              "GEMV rows below the roofline")


def gap_by_kind(rows):
    """Per weight wave kind, in wave order, the parts of its waves' time above their ideal on
    each wave's slowest worker (the rows of a phase trace): {kind: dict(waves, ideal, and
    each of GAP_CAUSES, us summed over the waves)}: the first-task delay, the first phases of
    the worker's tasks (row["lead"]) and the rest of work - ideal. A part is negative when the
    worker's delay and first phase outlast the wave's excess (its rows streamed faster than
    the floor's rate). None when a weight wave's slowest worker has a task without its first
    mark (not a phase trace)."""
    weight_rows = [r for r in rows if r["kind"] in WEIGHT_KINDS]
    if not weight_rows or any(r.get("lead") is None for r in weight_rows):
        return None
    out = collections.OrderedDict()
    for r in weight_rows:
        k = out.setdefault(r["kind"], dict.fromkeys(("waves", "ideal") + GAP_CAUSES, 0.0))
        k["waves"] += 1
        k["ideal"] += r["ideal"]
        k[GAP_CAUSES[0]] += r["first_task_delay"]
        k[GAP_CAUSES[1]] += r["lead"]
        k[GAP_CAUSES[2]] += r["work"] - r["ideal"] - r["first_task_delay"] - r["lead"]
    return out


def gap_by_cause(rows, split, kinds=None):
    """The token's split (analyse's) with "GEMV below the roofline" cut into GAP_CAUSES
    (gap_by_kind's parts summed over the weight waves); the parts sum to the token as the
    split does. `kinds`: gap_by_kind(rows) when the caller has it. None when gap_by_kind is
    None."""
    if kinds is None:
        kinds = gap_by_kind(rows)
    if kinds is None:
        return None
    out = collections.OrderedDict()
    for k, v in split.items():
        if k == "GEMV below the roofline":
            out.update((c, sum(part[c] for part in kinds.values())) for c in GAP_CAUSES)
        else:
            out[k] = v
    return out


def gap_report(rows, split):
    """gap_by_cause as a line and gap_by_kind as a table (text), or None without phases."""
    kinds = gap_by_kind(rows)
    if kinds is None:
        return None
    gap = gap_by_cause(rows, split, kinds)
    out = [split_line("token by cause (each weight wave's slowest worker)", gap),
           f"{'weight wave kind':20s} {'waves':>5s} {'ideal us':>9s} {'delays us':>10s} "
           f"{'norm/merge us':>13s} {'rows below roofline us':>22s}"]
    for kind, k in kinds.items():
        out.append(f"{kind:20s} {int(k['waves']):5d} {k['ideal']:9.1f} {k[GAP_CAUSES[0]]:10.1f} "
                   f"{k[GAP_CAUSES[1]]:13.1f} {k[GAP_CAUSES[2]]:22.1f}")
    return "\n".join(out)


def split_line(title, split):
    """'title: T us = part v (p%), ...' for an ordered split of the token (us)."""
    total = sum(split.values())
    return f"{title}: {total:.1f} us = " + ", ".join(
        f"{k} {v:.1f} ({100 * v / total:.0f}%)" for k, v in split.items())


def report(trace, rows, split):
    """The table per wave kind and the split, as text."""
    out = [f"{trace['package']}: context {trace['context']}, {trace['workers']} workers, "
           f"{len(rows)} waves run; {trace['decode_ms_per_token']:.4f} ms/token in that generation",
           f"{'wave kind':20s} {'waves':>5s} {'span us':>9s} {'work us':>9s} {'barrier us':>10s} "
           f"{'ideal us':>9s} {'GB/s':>7s} {'1st task delay us':>17s} {'task us (median)':>16s}"]
    kinds = collections.OrderedDict()
    for r in rows:
        kinds.setdefault(r["kind"], []).append(r)
    for kind, rs in kinds.items():
        work = sum(r["work"] for r in rs)
        gbps = sum(r["bytes"] for r in rs) / work / 1e3 if work > 0 else 0
        out.append(f"{kind:20s} {len(rs):5d} {sum(r['span'] for r in rs):9.1f} {work:9.1f} "
                   f"{sum(r['barrier'] for r in rs):10.1f} {sum(r['ideal'] for r in rs):9.1f} "
                   f"{gbps:7.0f} {statistics.median(r['first_task_delay'] for r in rs):17.2f} "
                   f"{statistics.median(u for r in rs for u in r['task_us']):16.2f}")
    if trace.get("no_barrier_waves"):
        out.append(f"{len(trace['no_barrier_waves'])} waves have no grid barrier after them "
                   "(v31's --qkv_counters, docs/experiments/counters-v30-v31.patch): "
                   "each ends with its slowest worker, and the next wave's span starts there, so its tasks' "
                   "overlap with them is not in its span")
    out.append(split_line("token", split))
    return "\n".join(out)


def ns_per_clock(trace):
    """Nanoseconds per SM clock: the median over traced tasks of (end_ns - begin_ns) /
    (end_clk - begin_clk) (one ratio for the whole trace, so that the %globaltimer's coarse
    steps do not distort short tasks)."""
    ratios = [(t[9] - t[8]) / (t[11] - t[10]) for t in trace["tasks"]
              if t[8] and t[11] > t[10] and t[9] > t[8]]
    return statistics.median(ratios) if ratios else None


def phases(trace, slowest=False):
    """Per opcode with phases (PHASES), over the tasks that carry every one of its marks:
    {opcode: (tasks, [median us of each phase], median task us)}, in clocks converted at
    ns_per_clock. Each median is taken on its own, so the phases need not add up to the
    task. slowest: only each opcode's slowest sixteenth of those tasks (at least one), the
    ones that set a wave when most of its tasks are short (e.g. ATTENTION's chunks that hold
    positions at short contexts). None when the trace has no phase marks (not a phase-trace
    build)."""
    if "phases_clk" not in trace:
        return None
    scale = ns_per_clock(trace)
    spans = collections.defaultdict(list)  # opcode -> per task: phase us..., task us
    for t, marks in zip(trace["tasks"], trace["phases_clk"]):
        names = PHASES.get(t[2])
        if names is None or not t[10] or not t[11] or scale is None:
            continue
        inner = list(marks[:len(names) - 1])
        if len(inner) < len(names) - 1 or not all(inner):  # a mark missing: not counted
            continue
        edges = [t[10]] + inner + [t[11]]
        spans[t[2]].append([(b - a) * scale / 1e3 for a, b in zip(edges, edges[1:])] +
                           [(t[11] - t[10]) * scale / 1e3])
    if slowest:
        for rows in spans.values():  # keep the slowest ceil(n / 16), at least one
            rows.sort(key=lambda r: r[-1])
            del rows[:len(rows) - (len(rows) + 15) // 16]
    return {op: (len(rows), [statistics.median(col) for col in zip(*rows)][:-1],
                 statistics.median(r[-1] for r in rows))
            for op, rows in sorted(spans.items())}


def phase_report(trace):
    """The phase tables as text (all tasks with every mark, then each opcode's slowest
    sixteenth of them), or None for a trace without phase marks."""
    table = phases(trace)
    if table is None:
        return None
    scale = ns_per_clock(trace)
    out = [f"phases inside tasks: median us over the tasks with every mark (SM clocks at the "
           f"trace's median {1 / scale if scale else 0:.3f} clk/ns; each median on its own)"]
    for title, rows in (("", table), (" (the slowest sixteenth of each opcode's tasks)",
                                      phases(trace, slowest=True))):
        out.append(f"{'opcode':20s} {'tasks':>5s} {'task us':>8s}  phases (median us){title}")
        for op, (n, medians, task) in rows.items():
            out.append(f"{OPCODES[op]:20s} {n:5d} {task:8.2f}  " +
                       " | ".join(f"{name} {us:.2f}" for name, us in zip(PHASES[op], medians)))
        if not rows:
            out.append("(no task carries all its marks)")
    return "\n".join(out)


def balance(trace):
    """Bytes per worker per wave, (waves, workers) nested lists, and per wave max / mean
    (1.0 = every worker streams the same bytes; 0 for waves that stream nothing)."""
    grid = [[0] * trace["workers"] for _ in range(trace["waves"])]
    for t in trace["tasks"]:
        grid[t[1]][t[0]] += task_bytes(trace, t)
    ratio = []
    for row in grid:
        mean = sum(row) / len(row)
        ratio.append(max(row) / mean if mean else 0.0)
    return grid, ratio


def draw_balance(trace, path):
    """Heat map of bytes per worker per wave, and the busiest worker over the mean per wave."""
    plt = plot.pyplot()
    grid, ratio = balance(trace)
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(14, 8), sharex=True,
                                 gridspec_kw={"height_ratios": [3, 1]})
    image = ax.imshow([[b / 1024 for b in col] for col in zip(*grid)], aspect="auto",
                      interpolation="nearest", cmap="viridis", origin="lower")
    fig.colorbar(image, ax=ax, label="KB streamed (weights, or K/V for attention)")
    ax.set_ylabel("worker")
    ax.set_title(f"plan balance at context {trace['context']}: bytes per worker per wave")
    bx.plot(range(len(ratio)), ratio, "k.-")
    bx.axhline(1.0, color="gray", linewidth=0.5)
    bx.set_ylabel("max / mean")
    bx.set_xlabel("wave")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


# The split's colors in the figure, by part (analyse's split and gap_by_cause's).
SPLIT_COLORS = {"ideal streaming": "tab:green", "GEMV below the roofline": "tab:olive",
                GAP_CAUSES[0]: "khaki", GAP_CAUSES[1]: "tab:cyan", GAP_CAUSES[2]: "tab:olive",
                "attention": "tab:red", "barriers": "tab:gray", "rest": "tab:purple"}


def draw(trace, rows, split, path):
    """Per-worker timeline of the step and the split as one stacked bar: gap_by_cause's in a
    phase trace, else analyse's. The legend names the wave kinds the trace holds."""
    plt = plot.pyplot()
    split = gap_by_cause(rows, split) or split
    colors = dict(zip(OPCODES, ["tab:gray", "tab:blue", "tab:red", "tab:orange", "tab:green",
                                "tab:purple", "tab:brown"]))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(16, 6), gridspec_kw={"width_ratios": [5, 1]})
    t0 = min(t[8] for t in trace["tasks"] if t[8])
    for t in trace["tasks"]:
        if t[8]:
            ax.barh(t[0], (t[9] - t[8]) / 1e3, left=(t[8] - t0) / 1e3, height=1.0,
                    color=colors[t[2]], linewidth=0)
    present = {t[2] for t in trace["tasks"] if t[8]}
    for code, name in OPCODES.items():
        if code in present:
            ax.barh(0, 0, color=colors[code], label=name)
    ax.set_xlabel("microseconds since the step's first task")
    ax.set_ylabel("worker (thread block)")
    ax.set_title(f"one token, context {trace['context']}: tasks per worker "
                 f"(white: waiting, barriers)")
    ax.legend(loc="upper right", fontsize=7)
    bottom = 0.0
    for name, value in split.items():
        bx.bar(0, value, bottom=bottom, color=SPLIT_COLORS[name], label=f"{name} {value:.0f} us")
        bottom += value
    bx.set_xticks([])
    bx.set_ylabel("microseconds")
    bx.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    trace = load(FLAGS.trace)
    rows, split = analyse(trace, FLAGS.bandwidth_gbps)
    print(report(trace, rows, split))
    phase_text = phase_report(trace)
    if phase_text is not None:
        print(phase_text)
    gap_text = gap_report(rows, split)
    if gap_text is not None:
        print(gap_text)
    for path, fn in ((FLAGS.png, lambda p: draw(trace, rows, split, p)),
                     (FLAGS.balance_png, lambda p: draw_balance(trace, p))):
        if path:
            try:
                fn(path)
            except ImportError:
                sys.exit("--png and --balance_png need matplotlib: pip install matplotlib")
            print(f"wrote {path}")


if __name__ == "__main__":
    flags.mark_flags_as_required(["trace"])
    app.run(main)
