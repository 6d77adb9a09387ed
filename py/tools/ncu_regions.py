"""Nsight Compute's warp samples of the worker kernel, summed by opcode region, for several builds.

Usage: PYTHONPATH=py python3 py/tools/ncu_regions.py --build=A=main_inl.sass:ncu_A_sass.csv \\
           --build=B=b_inl.sass:ncu_B_sass.csv

Each --build is NAME=SASS:CSV (.xz and .gz accepted for both):
- SASS: `nvdisasm -c -gi` of the build's sm_90 cubin, made where the build was made with
  `nvcc -cubin -arch=sm_90 -O3 -std=c++17 -lineinfo -I. -I<bazel-bin> cuda/worker.cu` (the same
  flags as //cuda:worker_kernel, so the code is the one ncu sampled: the tool counts the
  opcodes that differ);
- CSV: `ncu -i REPORT --page source --csv --print-source sass` of a run with
  `--section WarpStateStats --section SourceCounters` (results/2026-11-30j-h200-stage/call_sl.sh).

An instruction belongs to the op_*.cuh file named at or before it in address order (the
innermost op file of its line record, so common.cuh helpers count with the op that inlines
them; instructions before any op file count as "worker"), and the FFN's to its phases by
line (cuda/op_ffn.cuh: the norm up to line 30, gate/up 31-41, down from 42). Printed per
region and build: the code it executed (KB: 16 bytes an instruction executed at least once),
its share of all samples (%) and its main stall reasons (% of the region's samples).
"""
import collections
import csv
import io
import re

from absl import app, flags

from planner import cli
from tools import trace_report

FLAGS = flags.FLAGS
flags.DEFINE_multi_string("build", [], "NAME=SASS:CSV of one build (repeat for several).")
flags.DEFINE_bool("wide_kernel", False, "Read the wide worker kernel (cuda/worker.h WorkerWide: hidden sizes above "
                  "2,048, head dims above 64 or not a multiple of 8, groups above 4), not the narrow one: "
                  "the kernel the profiled model ran.")

FFN_PHASES = [(1, 30, "norm"), (31, 41, "gate/up"), (42, 10 ** 9, "down")]
# The worker kernel's mangled names in the SASS: WorkerKernel<false> (or the one kernel of builds
# before the two), WorkerKernel<true> (cuda/worker.h WorkerWide).
KERNELS = {False: ("WorkerKernelENS_12WorkerParams", "WorkerKernelILb0E"), True: ("WorkerKernelILb1E",)}
TOTAL = "Warp Stall Sampling (All Samples)"
SHOWN = ["stall_long_sb", "stall_barrier", "stall_no_inst", "stall_wait", "stall_short_sb",
         "stall_branch_resolving", "stall_selected"]
LINE_RECORD = re.compile(r'## File "([^"]+)", line (\d+)(?: inlined at "([^"]+)", line (\d+))?')
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def parse_build_arg(text):
    """NAME=SASS:CSV -> (name, sass path, csv path); ValueError when malformed."""
    name, sep, rest = text.partition("=")
    sass, sep2, csv_path = rest.partition(":")
    if not sep or not sep2 or not name or not sass or not csv_path:
        raise ValueError(f"--build {text!r}: give NAME=SASS:CSV (nvdisasm -c -gi output, ncu source CSV)")
    return name, sass, csv_path


def region_of(files_lines):
    """[(file, line), ...] innermost first -> the region of the first op file, or None."""
    for f, line in files_lines:
        if f.startswith("op_"):
            if f == "op_ffn.cuh":
                return "ffn " + next(name for lo, hi, name in FFN_PHASES if lo <= line <= hi)
            return f[3:-4]
    return None


def sass_regions(text, wide=False):
    """The worker kernel's instructions in `nvdisasm -c -gi` text -> ({offset: region},
    {offset: opcode}), offsets in bytes from the kernel's start; `wide`: WorkerKernel<true>, else
    WorkerKernel<false> (KERNELS). ValueError when the text holds no such kernel."""
    lines = text.split("\n")
    names = KERNELS[wide]
    starts = [i for i, l in enumerate(lines) if l.startswith("//---") and any(k in l for k in names)]
    if not starts:
        raise ValueError(f"no {' or '.join(names)} function in the SASS: give nvdisasm -c -gi of the worker's "
                         "cubin (--wide_kernel: the wide kernel, cuda/worker.h WorkerWide)")
    owner, opcode, current = {}, {}, "worker"
    for l in lines[starts[0] + 1:]:
        if l.startswith("//---"):
            break
        m = LINE_RECORD.search(l)
        if m:
            records = [(m.group(1).split("/")[-1], int(m.group(2)))]
            if m.group(3):
                records.append((m.group(3).split("/")[-1], int(m.group(4))))
            current = region_of(records) or current
            continue
        m = INSTRUCTION.search(l)
        if m:
            offset = int(m.group(1), 16)
            owner[offset] = current
            opcode[offset] = m.group(2).split()[0]
    return owner, opcode


def number(text):
    """A CSV cell as ncu writes numbers ("1,234", "" for none) -> float."""
    return float(text.replace(",", "") or 0)


def summarize(owner, opcode, csv_text):
    """Sums one ncu source CSV by region -> ({region: Counter of 'exec KB', TOTAL and each stall
    column, 'stall_other'}, opcodes that differ from the SASS, instructions in the CSV).
    ValueError when the CSV has no per-instruction table."""
    rows = list(csv.reader(io.StringIO(csv_text)))
    header_at = next((i for i, r in enumerate(rows) if "Address" in r and TOTAL in r), None)
    if header_at is None:
        raise ValueError("no 'Address' and sample columns in the CSV: give ncu --page source --csv --print-source sass")
    header, data = rows[header_at], [r for r in rows[header_at + 1:] if r]
    if not data:
        raise ValueError("the CSV's per-instruction table is empty: was the kernel sampled (--section SourceCounters)?")
    col = {c: header.index(c) for c in header}
    stalls = [c for c in header if c.startswith("stall_") and not c.endswith("(Not Issued)")]
    base = int(data[0][col["Address"]], 16)
    regions = collections.defaultdict(collections.Counter)
    differ = 0
    for r in data:
        offset = int(r[col["Address"]], 16) - base
        differ += offset in opcode and opcode[offset] != r[col["Source"]].split()[0]
        a = regions[owner.get(offset, "?")]
        a["exec KB"] += 16 * (number(r[col["Instructions Executed"]]) > 0) / 1024
        for c in [TOTAL] + stalls:
            a[c] += number(r[col[c]])
    for a in regions.values():
        a["stall_other"] = sum(a[c] for c in stalls if c not in SHOWN)
    return dict(regions), differ, len(data)


def table(builds):
    """builds: [(name, regions, differ, instructions)] -> the report's lines; regions ordered by
    the first build's samples."""
    out = []
    grands = [sum(a[TOTAL] for a in regions.values()) for _, regions, _, _ in builds]  # samples per build
    for (name, regions, differ, n), grand in zip(builds, grands):
        kb = sum(a["exec KB"] for a in regions.values())
        out.append(f"{name}: {n} instructions, {differ} opcodes differ from the SASS, {grand:.0f} samples, "
                   f"{kb:.0f} KB of code executed")
    top = SHOWN + ["stall_other"]
    out.append("%-18s %-5s %7s %8s %6s " % ("region", "build", "exec KB", "samples", "% all") +
               " ".join("%8s" % c[6:].replace("branch_resolving", "branch")[:8] for c in top))
    first = builds[0][1]
    order = sorted(first, key=lambda k: -first[k][TOTAL])
    order += sorted({k for _, regions, _, _ in builds[1:] for k in regions} - set(order))
    for region in order:
        for (name, regions, _, _), grand in zip(builds, grands):
            a = regions.get(region)
            if not a or a[TOTAL] == 0:
                continue
            out.append("%-18s %-5s %7.1f %8.0f %6.1f " % (region, name, a["exec KB"], a[TOTAL], 100 * a[TOTAL] / grand) +
                       " ".join("%8.1f" % (100 * a[c] / a[TOTAL]) for c in top))
    return out


def main(argv):
    del argv
    cli.refuse_flags_of(["tools.trace_report"], "ncu_regions")
    if not FLAGS.build:
        raise app.UsageError("give at least one --build=NAME=SASS:CSV")
    builds = []
    for text in FLAGS.build:
        try:
            name, sass, csv_path = parse_build_arg(text)
            with trace_report.open_text(sass) as f:
                owner, opcode = sass_regions(f.read(), FLAGS.wide_kernel)
            with trace_report.open_text(csv_path) as f:
                builds.append((name,) + summarize(owner, opcode, f.read()))
        except (OSError, ValueError) as e:  # a missing file, a wrong file, a malformed --build
            raise app.UsageError(f"--build {text}: {e}") from e
    print("\n".join(table(builds)))


if __name__ == "__main__":
    app.run(main)
