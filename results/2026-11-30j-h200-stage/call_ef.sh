#!/usr/bin/env bash
# Call EF (seventeenth session, docs/PERFORMANCE.md "v40c and v41"), ON the GPU machine from the
# repo root, a fresh start. Here first: builds a = main, b = v40c (exp/stage-late-w15), bin = v41
# (exp/evict-first) packed as .gpu/ab.tar.xz (tests/gpu/prepare_ab.sh layout); carry it and
# this script as .gpu/call_ef.sh. ~6 min (~10 with racecheck).
# 1. Numerics unchanged: the shape models' logits at contexts 1, 32, 1024 of A, E (v41) and CQ
#    (v40c, both stages) compared with cmp; bin (v41): tiny models GPU = CPU with 10 x 500
#    tokens bit-identical run to run, golden; memcheck and synccheck on tiny_9x3.
# 2. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A, E, C0 (v40c, stages off), CQ.
# 3. One plain trace of A, E, CQ at contexts 32 and 1024, both shapes.
# 4. RACECHECK=1: racecheck of bin on tiny_9x3 (~230 s).
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
off="--stage_attn_out=false --stage_qkv=false"
for m in llama1b_shape smollm2_shape; do
  for cfg in "A .gpu/a" "E .gpu/bin" "CQ .gpu/b"; do
    set -- $cfg
    $2/gpu_check --package=$W/$m.tpkg --contexts=1,32,1024 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
      --check_target=false --logits_out=$W/logits_${m}_$1.bin | grep -E "FAIL"
  done
  for n in E CQ; do
    cmp -s $W/logits_${m}_A.bin $W/logits_${m}_$n.bin && echo "$m logits $n = A: bit-identical" ||
      echo "$m logits $n = A: FAIL, they differ"
  done
done
mkdir -p "$OUT/tiny_bin" && OUT=$OUT/tiny_bin bash tests/gpu/device_checks.sh probe tiny golden 2>&1 |
  grep -E "PASS|FAIL|rror|bit-identical" | head -20
for tool in memcheck synccheck; do CALL_SECONDS=$SECONDS bash tests/gpu/sanitize_one.sh bin $tool tiny_9x3; done
echo "checks done at ${SECONDS}s"
timeout 300 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=E=.gpu/bin --config=C0=.gpu/b:${off// /,} \
  --config=CQ=.gpu/b --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  call_trace .gpu/a A $m 32,1024
  call_trace .gpu/bin E $m 32,1024
  call_trace .gpu/b CQ $m 32,1024
done
echo "traces done at ${SECONDS}s"
if [ "${RACECHECK:-0}" = 1 ]; then  # shared-memory hazards; the cut leaves time to pack
  timeout $((575 - SECONDS)) compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/bin/gpu_check \
    --package=$W/tiny_9x3.tpkg --check_target=false --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=2 \
    --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 > "$OUT/sanitize_racecheck.txt" 2>&1
  echo "racecheck rc=$? at ${SECONDS}s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/sanitize_racecheck.txt" | tail -2)"
fi
call_end call_ef .gpu/call_ef.sh
