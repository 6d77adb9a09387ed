# Mutants of exp/direct-attention's op_attn_out.cuh ($B/ao.cuh): each __syncthreads deleted, one at a
# time (DirectAttention's 3, the one after it in OpAttnOut, and for completeness the merge path's 2 and
# the final one), plus three bound/role mutants. Built into $B/mut/<name> (source $B/mut/<name>.cuh).
import subprocess, os, sys
HERE = os.path.dirname(os.path.abspath(__file__)); sys.path.insert(0, os.path.join(HERE, ".."))
from emu_common import syncthreads_mutants
from compare_da import E
def build(name, text):
    p = f'{E}/mut/{name}.cuh'; open(p, 'w').write(text)
    subprocess.run(f'source {HERE}/setup.sh lib && da_build {E}/mut/{name} {p}', shell=True, check=True,
                   executable="/bin/bash", env=dict(os.environ, B=E))
    print('built', name, flush=True)
os.makedirs(f'{E}/mut', exist_ok=True)
src = open(f'{E}/ao.cuh').read().split('\n')
for line, v in syncthreads_mutants(src):
    build(f'ao_del_L{line}', '\n'.join(v))
s = '\n'.join(src)
for name, a, b in [
    ('writer_all', 'const bool writer = t.row_begin == 0;', 'const bool writer = true;'),
    ('v_loop_le', 'for (int j = 0; j < pos; ++j) o += e[j]', 'for (int j = 0; j <= pos; ++j) o += e[j]'),
    ('kv_mod', 'const int h = idx / ctx, j = idx - h * ctx, kv = h / group;', 'const int h = idx / ctx, j = idx - h * ctx, kv = h % NKV;'),
]:
    assert s.count(a) == 1, a
    build(f'ao_{name}', s.replace(a, b))
