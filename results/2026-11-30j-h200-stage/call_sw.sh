#!/usr/bin/env bash
# The next session's first GPU call (docs/PERFORMANCE.md "v40"), ON the GPU machine from the repo
# root. Here first (a clone of main has no exp/ branch; make it from the patch):
#   git branch exp/stage-wo main && git worktree add /tmp/stage-wo exp/stage-wo &&
#     (cd /tmp/stage-wo && git apply docs/experiments/stage-wo.patch && git add -A && git commit -qm "v40")
#   bash tests/gpu/prepare_ab.sh main exp/stage-wo
# (a = main, bin = v40); carry .gpu/ab.tar.xz and this script as .gpu/call_sw.sh. ~8.5 min.
# 1. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A (main) and v40's binary three
#    ways: S0 (--stage_attn_out=false --stage_qkv=false: the code without copies), S (Wo rows
#    only: --stage_qkv=false), SQ (the default: Wo and QKV rows).
# 2. The stage must not change a bit: the shape models' GPU logits at contexts 1, 32, 1024
#    from A, S0 and SQ (gpu_check --logits_out; the tiny models have too few rows a task to
#    reach the row pairs and the 64 KB pieces), compared with cmp. bin: tiny models GPU = CPU
#    (within tolerance) and 10 x 500 tokens bit-identical run to run (its own probe; both
#    stages on: gpu_check's line says "B of it the weight stage for ATTN_OUT QKV"), golden;
#    memcheck and synccheck on tiny_9x3. Racecheck (~230 s) in a second call if v40 lands.
# 3. One plain trace of each at contexts 32 and 1024, both shapes (JSON kept, xz, for
#    py/tools/trace_compare.py). The common steps: tests/gpu/call_lib.sh.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
for m in llama1b_shape smollm2_shape; do
  .gpu/a/gpu_check --package=$W/$m.tpkg --contexts=1,32,1024 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
    --check_target=false --logits_out=$W/logits_${m}_A.bin | grep -E "FAIL"
  .gpu/bin/gpu_check --package=$W/$m.tpkg --contexts=1,32,1024 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
    --check_target=false --stage_attn_out=false --stage_qkv=false --logits_out=$W/logits_${m}_S0.bin | grep -E "FAIL"
  .gpu/bin/gpu_check --package=$W/$m.tpkg --contexts=1,32,1024 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
    --check_target=false --logits_out=$W/logits_${m}_SQ.bin | grep -E "FAIL|on GPU"
  for n in A S0; do
    cmp -s $W/logits_${m}_$n.bin $W/logits_${m}_SQ.bin && echo "$m logits SQ = $n: bit-identical" ||
      echo "$m logits SQ = $n: FAIL, they differ"
  done
done
timeout 300 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=S0=.gpu/bin:--stage_attn_out=false,--stage_qkv=false \
  --config=S=.gpu/bin:--stage_qkv=false --config=SQ=.gpu/bin --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 |
  grep -v "^I1"
echo "bench done at ${SECONDS}s"
mkdir -p "$OUT/tiny_bin" && OUT=$OUT/tiny_bin bash tests/gpu/device_checks.sh probe tiny golden 2>&1 |
  grep -E "PASS|FAIL|rror|weight stage" | head -16
for tool in memcheck synccheck; do CALL_SECONDS=$SECONDS bash tests/gpu/sanitize_one.sh bin $tool tiny_9x3; done
echo "checks done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  call_trace .gpu/a A $m 32,1024
  call_trace .gpu/bin S0 $m 32,1024 --stage_attn_out=false --stage_qkv=false
  call_trace .gpu/bin S $m 32,1024 --stage_qkv=false
  call_trace .gpu/bin SQ $m 32,1024
done
call_end call_sw .gpu/call_sw.sh
