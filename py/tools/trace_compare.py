"""Which tasks a worker change moved, beyond what a rebuild alone moves (traces of several builds).

Usage: PYTHONPATH=py python3 py/tools/trace_compare.py --named_trace=A=a.json --named_trace=A=a_r2.json
           --named_trace=B=b.json [--named_trace=P1=p1.json ...] [--baseline=A] [--null=P1,P3]

Each --named_trace is NAME=PATH, a trace from `gpu_check --trace_out` of one build (.xz and .gz
accepted); a NAME given several times (rounds of the same build) is the mean of its traces'
values. Every trace must come from the same package and context. Per wave kind, a build's
value is the median task duration (us) over all its tasks of that kind, and the last row is
the token's span (us).

Why (docs/PERFORMANCE.md, calls N and I): any source change reschedules the whole inlined
worker, and a rebuild that changes nothing moves task medians by up to ~0.2 us (~0.5 us for
ATTENTION at long contexts) and the token by up to ~1%. A difference is reported as
attributable ("*") only when it exceeds the noise of that kind:
  noise = max(largest |null build - baseline|, largest spread between rounds of one build),
over the --null builds (null changes: e.g. a never-taken branch, reordered switch cases) and
the repeated NAMEs. Without either, no difference is marked.
"""
import collections
import statistics

from absl import app, flags

from planner import cli
from tools import trace_report

FLAGS = flags.FLAGS
flags.DEFINE_multi_string("named_trace", [], "NAME=PATH of a trace (repeat a NAME for rounds of one build).")
flags.DEFINE_string("baseline", None, "The NAME the others are compared with (default: the first).")
flags.DEFINE_list("null", [], "NAMEs of null builds (changes that should move nothing): their "
                  "differences from the baseline set the noise.")

TOKEN = "token (span)"


def parse_trace_arg(text):
    """NAME=PATH -> (name, path); ValueError when malformed."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path or not name.replace("_", "").isalnum():
        raise ValueError(f"--named_trace {text!r}: give NAME=PATH, NAME letters, digits or _")
    return name, path


def task_medians(trace):
    """{wave kind: median task us over every task of that kind, TOKEN: the token's span us}."""
    rows, _ = trace_report.analyse(trace, bandwidth_gbps=1.0)  # the bandwidth only sets "ideal"
    pooled = collections.defaultdict(list)
    for r in rows:
        pooled[r["kind"]].extend(r["task_us"])
    values = {kind: statistics.median(us) for kind, us in pooled.items()}
    values[TOKEN] = sum(r["span"] for r in rows)
    return values


def compare(traces, baseline=None, null=()):
    """Per kind, each build's value, its difference from the baseline and whether it is beyond
    the noise.

    traces: [(name, trace dict)], a name possibly repeated; baseline: a name (default the
    first); null: names of null builds. Returns (names, kinds, table, noise): table[name][kind]
    = (value, difference or None for the baseline, attributable bool); noise[kind] = us or None
    when neither null builds nor rounds were given. ValueError when the traces do not come from
    one package and context, or a name is unknown.
    """
    if not traces:
        raise ValueError("no --named_trace given")
    first = traces[0][1]
    for name, t in traces:
        for key in ("package", "context", "workers", "waves"):
            if t.get(key) != first.get(key):
                raise ValueError(f"trace of {name}: {key} {t.get(key)!r} differs from the first trace's "
                                 f"{first.get(key)!r}: compare traces of one package and context")
    names = list(dict.fromkeys(name for name, _ in traces))
    baseline = baseline or names[0]
    for n in [baseline, *null]:
        if n not in names:
            raise ValueError(f"{n!r} is not among the traces' names {names}")
    if baseline in null:
        raise ValueError(f"the baseline {baseline!r} cannot also be a null build")
    rounds = collections.defaultdict(list)
    for name, t in traces:
        rounds[name].append(task_medians(t))
    kinds = list(dict.fromkeys(k for per in rounds.values() for r in per for k in r))
    kinds.remove(TOKEN)
    kinds.append(TOKEN)
    value = {n: {k: statistics.mean(r[k] for r in rounds[n] if k in r) for k in kinds
                 if any(k in r for r in rounds[n])} for n in names}
    noise = {}
    for k in kinds:
        spreads = [max(r[k] for r in rounds[n]) - min(r[k] for r in rounds[n])
                   for n in names if len(rounds[n]) > 1 and all(k in r for r in rounds[n])]
        spreads += [abs(value[n][k] - value[baseline][k]) for n in null if k in value[n] and k in value[baseline]]
        noise[k] = max(spreads) if spreads else None
    table = {}
    for n in names:
        table[n] = {}
        for k, v in value[n].items():
            if n == baseline or k not in value[baseline]:
                table[n][k] = (v, None, False)
                continue
            d = v - value[baseline][k]
            table[n][k] = (v, d, noise[k] is not None and n not in null and abs(d) > noise[k])
    return names, kinds, table, noise


def render(names, kinds, table, noise, baseline):
    """The comparison as text: one row per kind, one column per build (value, difference)."""
    head = f"{'kind':20s} {'noise':>7s}" + "".join(f" {n:>18s}" for n in names)
    lines = [f"median task us per wave kind (last row: the token's span); baseline {baseline}; "
             "* = beyond the noise", head]
    for k in kinds:
        cells = []
        for n in names:
            if k not in table[n]:
                cells.append(f" {'-':>18s}")
                continue
            v, d, mark = table[n][k]
            cells.append(f" {v:9.2f}" + (f" {d:+7.2f}{'*' if mark else ' '}" if d is not None else " " * 9))
        lines.append(f"{k:20s} {('%.2f' % noise[k]) if noise[k] is not None else '-':>7s}" + "".join(cells))
    return "\n".join(lines)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    cli.refuse_flags_of(["tools.trace_report"], "trace_compare")
    try:
        named = [parse_trace_arg(t) for t in FLAGS.named_trace]
        traces = []
        for name, path in named:
            try:
                traces.append((name, trace_report.load(path)))
            except (OSError, ValueError) as e:
                raise ValueError(f"--named_trace {name}={path}: {e}") from e
        names, kinds, table, noise = compare(traces, FLAGS.baseline, FLAGS.null)
    except ValueError as e:
        raise app.UsageError(str(e))
    print(render(names, kinds, table, noise, FLAGS.baseline or names[0]))


if __name__ == "__main__":
    app.run(main)
