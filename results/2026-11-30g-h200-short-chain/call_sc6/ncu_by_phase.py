"""Call SC6's Nsight Compute samples of the worker kernel, summed by opcode and phase.

Run in a folder holding ncu_{MODEL}_sass.csv and v33_inl.sass (here: xz -dk the .xz files), or make
the SASS again:
  nvcc -cubin -arch=sm_90 -O3 -std=c++17 -lineinfo -I. -I<bazel-bin> -o v33.cubin cuda/worker.cu
  (a checkout of fc5636c or later with the same op files; the script counts opcodes that
  differ from ncu's), then nvdisasm -c -gi v33.cubin > v33_inl.sass.
An instruction belongs to the op_*.cuh line named at or before it in address order, the
innermost op file of its line record (common.cuh helpers count with the op that inlines them).
ATTENTION and ATTN_OUT are split by the lines of their phases (cuda/op_attention.cuh and
cuda/op_attn_out.cuh at fc5636c; the phase marks' positions).
"""
import collections
import csv
import re
import sys

PHASES = {  # file: [(first line, last line, phase)]
    'op_attention.cuh': [(1, 222, 'attend'), (223, 272, 'rope+append'), (273, 307, 'attend'),
                         (308, 400, 'merge+write')],
    'op_attn_out.cuh': [(1, 134, 'merge'), (135, 400, 'Wo gemv')],
    'op_rmsnorm_gemv.cuh': [(1, 15, 'norm'), (16, 400, 'gemv')],
    'op_ffn.cuh': [(1, 30, 'norm'), (31, 41, 'gate/up'), (42, 400, 'down')],
}


def region(files_lines):
    for f, line in files_lines:
        if f.startswith('op_'):
            for lo, hi, name in PHASES.get(f, [(1, 10 ** 6, '')]):
                if lo <= line <= hi:
                    return f[3:-4] + (' ' + name if name else '')
    return '?'


def regions(path):
    lines = open(path).read().split('\n')
    start = [i for i, l in enumerate(lines) if l.startswith('//---') and 'WorkerKernelENS_12WorkerParams' in l][0]
    cur, owner, opcode = '?', {}, {}
    for l in lines[start + 1:]:
        if l.startswith('//---'):
            break
        f = re.search(r'## File "([^"]+)", line (\d+)(?: inlined at "([^"]+)", line (\d+))?', l)
        if f:
            fl = [(f.group(1).split('/')[-1], int(f.group(2)))]
            if f.group(3):
                fl.append((f.group(3).split('/')[-1], int(f.group(4))))
            r = region(fl)
            if r != '?':
                cur = r
            continue
        a = re.search(r'/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', l)
        if a:
            owner[int(a.group(1), 16)] = cur
            opcode[int(a.group(1), 16)] = a.group(2).split()[0]
    return owner, opcode


owner, opcode = regions('v33_inl.sass')
for model in sys.argv[1:] or ['llama1b_shape', 'smollm2_shape']:
    rows = list(csv.reader(open(f'ncu_{model}_sass.csv')))
    hi = next(i for i, r in enumerate(rows) if 'Address' in r)
    h, data = rows[hi], rows[hi + 1:]
    ia, isrc, ie = h.index('Address'), h.index('Source'), h.index('Instructions Executed')
    base = int(data[0][ia], 16)
    stalls = [c for c in h if c.startswith('stall_') and not c.endswith('(Not Issued)')]
    total_col = 'Warp Stall Sampling (All Samples)'
    agg = collections.defaultdict(collections.Counter)
    mismatched = 0
    for r in data:
        off = int(r[ia], 16) - base
        mismatched += off in opcode and opcode[off] != r[isrc].split()[0]
        a = agg[owner.get(off, '?')]
        a['exec KB'] += 16 * (float(r[ie].replace(',', '') or 0) > 0) / 1024
        for c in [total_col] + stalls:
            a[c] += float(r[h.index(c)].replace(',', '') or 0)
    grand = sum(a[total_col] for a in agg.values())
    shown = ['stall_long_sb', 'stall_barrier', 'stall_no_inst', 'stall_wait', 'stall_short_sb', 'stall_membar',
             'stall_branch_resolving', 'stall_selected']
    for a in agg.values():
        a['stall_other'] = sum(a[c] for c in stalls if c not in shown)
    top = shown + ['stall_other']
    print(f'== {model}: {len(data)} instructions, {mismatched} opcodes differ from the local build; '
          f'{grand:.0f} samples; columns: % of the region\'s samples')
    print('%-26s %7s %7s %6s ' % ('region', 'exec KB', 'samples', '% all') + ' '.join('%8s' % c[6:].replace('branch_resolving', 'branch')[:8] for c in top))
    for name, a in sorted(agg.items(), key=lambda kv: -kv[1][total_col]):
        s = a[total_col]
        if s == 0:
            continue
        print('%-26s %7.1f %7.0f %6.1f ' % (name, a['exec KB'], s, 100 * s / grand) +
              ' '.join('%8.1f' % (100 * a[c] / s) for c in top))
