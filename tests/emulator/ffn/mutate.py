# One mutant per __syncthreads of NEW's op_ffn.cuh, of RmsNormToShared and of BlockSum (common.cuh;
# RmsNormToShared calls it), plus op_rmsnorm_gemv.cuh and op_lm_head.cuh, that call deleted. Each
# mutant: $B/mutsrc/NAME/cuda/<file> (mutated) ahead of fake_new on the include path (-> bash mutrun.sh).
import subprocess, os, sys
HERE = os.path.dirname(os.path.abspath(__file__)); sys.path.insert(0, os.path.join(HERE, ".."))
from emu_common import syncthreads_mutants
B = os.environ["B"]
def build(name, fname, text):
    d = f"{B}/mutsrc/{name}/cuda"; os.makedirs(d, exist_ok=True); open(f"{d}/{fname}", "w").write(text)
    subprocess.run(f"source {HERE}/setup.sh lib; ffn_build {name} new {B}/mutsrc/{name} mut",
                   shell=True, check=True, executable="/bin/bash", env=dict(os.environ, B=B))
    print("built", name, flush=True)
if __name__ == "__main__":
    for f, pre in (("op_ffn.cuh", "ffn"), ("common.cuh", "common"), ("op_rmsnorm_gemv.cuh", "gemv"), ("op_lm_head.cuh", "lm")):
        for line, v in syncthreads_mutants(open(f"{B}/fake_new/cuda/{f}").read().split("\n")):
            build(f"{pre}_del_L{line}", f, "\n".join(v))
