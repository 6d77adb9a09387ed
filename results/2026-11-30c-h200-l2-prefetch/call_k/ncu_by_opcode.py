"""Call K's Nsight Compute samples of the worker kernel, summed by opcode file.

Run in a folder holding ncu_{W,LW}_sass.csv (xz -dk the .xz here) and {w,lw}_inl.sass:
  nvcc -cubin -arch=sm_90 -O3 -std=c++17 -lineinfo -I. -I<bazel-bin> -o w.cubin cuda/worker.cu
  (in a checkout of d4a8ebe for W, of a7bc25d = exp/lanes-wm for LW; the SASS must match
  ncu's instruction for instruction: the script counts mismatched opcodes), then
  nvdisasm -c -gi w.cubin > w_inl.sass.
An instruction belongs to the last op_*.cuh named at or before it in address order (as the
innermost file or the one it is inlined at): the op's helpers from common.cuh are inlined
into its body, so they count with it.
"""
import collections
import csv
import re


def regions(path):
    lines = open(path).read().split('\n')
    start = [i for i, l in enumerate(lines) if l.startswith('//---') and 'WorkerKernelENS_12WorkerParams' in l][0]
    cur, owner, opcode = '?', {}, {}
    for l in lines[start + 1:]:
        if l.startswith('//---'):
            break
        f = re.search(r'## File "([^"]+)", line (\d+)(?: inlined at "([^"]+)", line (\d+))?', l)
        if f:
            files = [f.group(1).split('/')[-1]] + ([f.group(3).split('/')[-1]] if f.group(3) else [])
            ops = [x for x in files if x.startswith('op_')]
            if ops:
                cur = ops[0]
            continue
        a = re.search(r'/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', l)
        if a:
            owner[int(a.group(1), 16)] = cur
            opcode[int(a.group(1), 16)] = a.group(2).split()[0]
    return owner, opcode


for name, sass in [('W', 'w_inl.sass'), ('LW', 'lw_inl.sass')]:
    owner, opcode = regions(sass)
    rows = list(csv.reader(open(f'ncu_{name}_sass.csv')))
    h, data = rows[1], rows[2:]
    ia, isrc, ie = h.index('Address'), h.index('Source'), h.index('Instructions Executed')
    base = int(data[0][ia], 16)
    cols = ['Warp Stall Sampling (All Samples)', 'stall_no_inst', 'stall_long_sb', 'stall_barrier']
    agg = collections.defaultdict(collections.Counter)
    mismatched = 0
    for r in data:
        off = int(r[ia], 16) - base
        mismatched += off in opcode and opcode[off] != r[isrc].split()[0]
        a = agg[owner.get(off, '?')]
        a['bytes'] += 16
        a['executed'] += 16 * (float(r[ie].replace(',', '') or 0) > 0)
        for c in cols:
            a[c] += float(r[h.index(c)].replace(',', '') or 0)
    print(f'== {name}: {len(data)} instructions, {mismatched} opcodes differ from the local build')
    print('%-20s %9s %9s %9s %9s %9s %9s' % ('region', 'KB', 'exec KB', 'samples', 'no_inst', 'long_sb', 'barrier'))
    total = collections.Counter()
    for f, a in sorted(agg.items(), key=lambda kv: -kv[1]['executed']):
        total.update(a)
        print('%-20s %9.1f %9.1f %9d %9d %9d %9d' % (f, a['bytes'] / 1024, a['executed'] / 1024, *[a[c] for c in cols]))
    print('%-20s %9.1f %9.1f %9d %9d %9d %9d' % ('all', total['bytes'] / 1024, total['executed'] / 1024, *[total[c] for c in cols]))
