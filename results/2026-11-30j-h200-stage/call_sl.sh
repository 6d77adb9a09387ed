#!/usr/bin/env bash
# Call SL (seventeenth session, docs/PERFORMANCE.md "v40b"), ON the GPU machine from the repo
# root, a fresh start. Here first: builds a = main, b = v40 (exp/stage-wo2: stage-wo.patch on
# main), bin = v40b (exp/stage-late: the copies start after the worker's own tasks, ahead of the
# grid barrier) packed as .gpu/ab.tar.xz (tests/gpu/prepare_ab.sh layout); carry it and this
# script as .gpu/call_sl.sh. ~7 min.
# 1. The stage must not change a bit: the shape models' logits at contexts 1, 32, 1024 from A
#    and v40b's default (both stages), compared with cmp; tiny models GPU = CPU, golden,
#    memcheck and synccheck on tiny_9x3 (bin).
# 2. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A, L0 (v40b, both stages off),
#    LS (v40b, Wo rows only), LQ (v40b, Wo and QKV rows).
# 3. Nsight Compute, one 16-step window at context 32, 1B shape: A and v40's binary with both
#    stages off (call SW's S0: +3.5% with the FFN's code unchanged); per-instruction samples
#    as CSV for ncu_by_phase.py (is it instruction fetch?).
# 4. One plain trace of A, L0, LS, LQ at contexts 32 and 1024, both shapes.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
off="--stage_attn_out=false --stage_qkv=false"
for m in llama1b_shape smollm2_shape; do
  .gpu/a/gpu_check --package=$W/$m.tpkg --contexts=1,32,1024 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
    --check_target=false --logits_out=$W/logits_${m}_A.bin | grep -E "FAIL"
  .gpu/bin/gpu_check --package=$W/$m.tpkg --contexts=1,32,1024 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
    --check_target=false --logits_out=$W/logits_${m}_LQ.bin | grep -E "FAIL|on GPU"
  cmp -s $W/logits_${m}_A.bin $W/logits_${m}_LQ.bin && echo "$m logits LQ = A: bit-identical" ||
    echo "$m logits LQ = A: FAIL, they differ"
done
mkdir -p "$OUT/tiny_bin" && OUT=$OUT/tiny_bin bash tests/gpu/device_checks.sh probe tiny golden 2>&1 |
  grep -E "PASS|FAIL|rror|weight stage" | head -16
for tool in memcheck synccheck; do CALL_SECONDS=$SECONDS bash tests/gpu/sanitize_one.sh bin $tool tiny_9x3; done
echo "checks done at ${SECONDS}s"
timeout 300 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=L0=.gpu/bin:${off// /,} \
  --config=LS=.gpu/bin:--stage_qkv=false --config=LQ=.gpu/bin --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 |
  grep -v "^I1"
echo "bench done at ${SECONDS}s"
m=llama1b_shape
for cfg in "A .gpu/a" "S0 .gpu/b $off"; do
  set -- $cfg; n=$1 d=$2; shift 2
  printf "context 32 3\nquit\n" | timeout 150 ncu --clock-control none --kernel-name regex:WorkerKernel \
    --launch-skip 2 --launch-count 1 --section WarpStateStats --section SourceCounters \
    -f -o "$OUT/ncu_$n" $d/bench --package=$W/$m.tpkg --check_target=false "$@" > "$OUT/ncu_$n.log" 2>&1
  echo "ncu $n: rc=$? at ${SECONDS}s: $(tail -2 "$OUT/ncu_$n.log" | tr '\n' ' ' | cut -c1-300)"
  ncu -i "$OUT/ncu_$n.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_${n}_sass.csv" 2>&1
  ncu -i "$OUT/ncu_$n.ncu-rep" --page details --csv > "$OUT/ncu_${n}_details.csv" 2>&1
  xz -f "$OUT/ncu_${n}_sass.csv"; rm -f "$OUT/ncu_$n.ncu-rep"
done
for m in llama1b_shape smollm2_shape; do
  call_trace .gpu/a A $m 32,1024
  call_trace .gpu/bin L0 $m 32,1024 $off
  call_trace .gpu/bin LS $m 32,1024 --stage_qkv=false
  call_trace .gpu/bin LQ $m 32,1024
done
call_end call_sl .gpu/call_sl.sh
