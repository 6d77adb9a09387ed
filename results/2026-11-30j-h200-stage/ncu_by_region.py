"""Nsight Compute warp samples of the worker kernel, summed by opcode region, for several builds.

Usage (a folder holding each build's ncu CSV and its local SASS):
  python3 ncu_by_region.py NAME=SASS:CSV [NAME=SASS:CSV ...]
SASS: `nvdisasm -c -gi` of `nvcc -cubin -arch=sm_90 -O3 -std=c++17 -lineinfo -I. -I<bazel-bin>
cuda/worker.cu` of the build's checkout (the script counts opcodes that differ from ncu's);
CSV: `ncu -i REP --page source --csv --print-source sass` (call SL's ncu_NAME_sass.csv.xz,
unpacked). An instruction belongs to the op_*.cuh file named at or before it in address order
(the innermost op file of its line record: common.cuh helpers count with the op that inlines
them), and the FFN to its phases by line (cuda/op_ffn.cuh: norm 1-30, gate/up 31-41, down 42-).
Prints per region: executed code (KB), % of all samples, and the main stall reasons as % of
the region's samples, one row per build.
"""
import collections
import csv
import re
import sys

FFN_PHASES = [(1, 30, 'norm'), (31, 41, 'gate/up'), (42, 10 ** 6, 'down')]


def region(files_lines):
    for f, line in files_lines:
        if f.startswith('op_'):
            if f == 'op_ffn.cuh':
                return 'ffn ' + next(n for lo, hi, n in FFN_PHASES if lo <= line <= hi)
            return f[3:-4]
    return None


def regions(path):
    lines = open(path).read().split('\n')
    start = [i for i, l in enumerate(lines) if l.startswith('//---') and 'WorkerKernelENS_12WorkerParams' in l][0]
    cur, owner, opcode = 'worker', {}, {}
    for l in lines[start + 1:]:
        if l.startswith('//---'):
            break
        f = re.search(r'## File "([^"]+)", line (\d+)(?: inlined at "([^"]+)", line (\d+))?', l)
        if f:
            fl = [(f.group(1).split('/')[-1], int(f.group(2)))]
            if f.group(3):
                fl.append((f.group(3).split('/')[-1], int(f.group(4))))
            cur = region(fl) or cur
            continue
        a = re.search(r'/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', l)
        if a:
            owner[int(a.group(1), 16)] = cur
            opcode[int(a.group(1), 16)] = a.group(2).split()[0]
    return owner, opcode


SHOWN = ['stall_long_sb', 'stall_barrier', 'stall_no_inst', 'stall_wait', 'stall_short_sb', 'stall_branch_resolving',
         'stall_selected']
TOTAL = 'Warp Stall Sampling (All Samples)'


def summarize(sass, csv_path):
    owner, opcode = regions(sass)
    rows = list(csv.reader(open(csv_path)))
    hi = next(i for i, r in enumerate(rows) if 'Address' in r)
    h, data = rows[hi], rows[hi + 1:]
    ia, isrc, ie = h.index('Address'), h.index('Source'), h.index('Instructions Executed')
    base = int(data[0][ia], 16)
    stalls = [c for c in h if c.startswith('stall_') and not c.endswith('(Not Issued)')]
    agg = collections.defaultdict(collections.Counter)
    mismatched = 0
    for r in data:
        off = int(r[ia], 16) - base
        mismatched += off in opcode and opcode[off] != r[isrc].split()[0]
        a = agg[owner.get(off, '?')]
        a['exec KB'] += 16 * (float(r[ie].replace(',', '') or 0) > 0) / 1024
        for c in [TOTAL] + stalls:
            a[c] += float(r[h.index(c)].replace(',', '') or 0)
    for a in agg.values():
        a['stall_other'] = sum(a[c] for c in stalls if c not in SHOWN)
    return agg, mismatched, len(data)


def main(args):
    builds = []
    for arg in args:
        name, _, rest = arg.partition('=')
        sass, _, csv_path = rest.partition(':')
        builds.append((name,) + summarize(sass, csv_path))
    top = SHOWN + ['stall_other']
    for name, agg, mismatched, n in builds:
        grand = sum(a[TOTAL] for a in agg.values())
        print(f'{name}: {n} instructions, {mismatched} opcodes differ from the local SASS, {grand:.0f} samples, '
              f'{sum(a["exec KB"] for a in agg.values()):.0f} KB of code executed')
    print('%-18s %-5s %7s %7s %6s ' % ('region', 'build', 'exec KB', 'samples', '% all') +
          ' '.join('%8s' % c[6:].replace('branch_resolving', 'branch')[:8] for c in top))
    order = sorted(builds[0][1], key=lambda k: -builds[0][1][k][TOTAL])
    for reg in order:
        for name, agg, _, _ in builds:
            a = agg.get(reg)
            if not a or a[TOTAL] == 0:
                continue
            s, grand = a[TOTAL], sum(x[TOTAL] for x in agg.values())
            print('%-18s %-5s %7.1f %7.0f %6.1f ' % (reg, name, a['exec KB'], s, 100 * s / grand) +
                  ' '.join('%8.1f' % (100 * a[c] / s) for c in top))


if __name__ == '__main__':
    main(sys.argv[1:])
