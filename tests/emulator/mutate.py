# Mutants of the NEW op_attn_out.cuh ($B/ao_new.cuh): each __syncthreads deleted (ao_del_L<line>),
# plus, when the file has exp/attn-out-one-chunk's fast path, a numeric mutant that only the exact
# (bitwise) check of compare_ao.py can see: the fast path's division replaced by a multiplication
# with the reciprocal (ao_recip; within 1 ulp). Built into $B/mut (-> bash mutrun.sh).
import subprocess, os
from emu_common import syncthreads_mutants
B = os.environ["B"]; HERE = os.path.dirname(os.path.abspath(__file__))
# build(NAME, OP_TEXT[, COMMON_TEXT]): $B/mut/NAME from OP_TEXT as the op file and, when given,
# COMMON_TEXT as cuda/common.cuh ($B/mutsrc/NAME/cuda, ahead of fake_new on the include path).
def build(name, text, common=None):
    inc = f'{B}/fake_new'
    if common is not None:
        d = f'{B}/mutsrc/{name}'; os.makedirs(f'{d}/cuda', exist_ok=True); open(f'{d}/cuda/common.cuh', 'w').write(common)
        inc = f'{d} {inc}'
    os.makedirs(f'{B}/mut', exist_ok=True)
    p = f'{B}/mut/{name}.cuh'; open(p, 'w').write(text)
    subprocess.run(f'source {HERE}/emu_lib.sh && emu_build {B}/mut/{name} {HERE}/ao_tu.cc {HERE}/rt_ao.cc '
                   f'\'-DOPFILE="{p}"\' {B} {inc} {B}/real_new', shell=True, check=True, executable="/bin/bash")
    print('built', name, flush=True)
if __name__ == '__main__':
    src = open(f'{B}/ao_new.cuh').read().split('\n')
    for line, v in syncthreads_mutants(src):
        build(f'ao_del_L{line}', '\n'.join(v))
    s = '\n'.join(src); a = 'attn[i] = (0.0f + pc[d]) / (0.0f + pc[HD + 1]);'
    if s.count(a) == 1:
        build('ao_recip', s.replace(a, 'attn[i] = (0.0f + pc[d]) * (1.0f / (0.0f + pc[HD + 1]));'))
