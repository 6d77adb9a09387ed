#!/usr/bin/env bash
# Next session's first GPU call (docs/PERFORMANCE.md, "v30" and "Next (... eleventh session)"),
# run ON the GPU machine from the repo root. Here first: `bash tests/gpu/prepare_ab.sh 80cda5d main`
# (a = main before v30, bin = main; writes .gpu/ab.tar.xz, wait for "wrote"); carry .gpu/ab.tar.xz
# and this script as .gpu/call_u.sh. ~8 min:
# 1. main's checks at the default; v30's checks (`--attention_merge`): the tiny models GPU = CPU
#    and 10 x 500 tokens bit-identical, also with every step in tiles; memcheck, synccheck,
#    racecheck of tiny_9x3 with the option.
# 2. A0 = main before v30 (whether v30's code, present but off, costs anything), A = main,
#    M = main with --attention_merge: ab_compare (traces at 32, 1024, 4064); bench windows of A
#    and M at 256-4096 in three interleaved blocks, both shapes.
# 3. Between them: `floor --mode=pipeline` with the cp.async ring runs (PERFORMANCE.md "Next" 2).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT/bench" "$OUT/merge" "$OUT/merge_tiles"
export PYTHONPATH=py:.
W=/tmp/tileinfer_models
tar -C .gpu -xJf .gpu/ab.tar.xz
bash tests/gpu/device_checks.sh info probe tiny golden > "$OUT/checks.txt" 2>&1
echo "main checks rc=$? at ${SECONDS}s: $(grep -c 'gpu_check: PASS' "$OUT/checks.txt") PASS, $(grep -c FAIL "$OUT/checks.txt") FAIL"
OUT=$OUT/merge GPU_CHECK_FLAGS=--attention_merge=true bash tests/gpu/device_checks.sh tiny > "$OUT/merge/checks.txt" 2>&1
echo "merge checks rc=$?: $(grep -c 'gpu_check: PASS' "$OUT/merge/checks.txt") PASS, $(grep -c FAIL "$OUT/merge/checks.txt") FAIL"
OUT=$OUT/merge_tiles GPU_CHECK_FLAGS="--attention_merge=true --attention_tile_min=1" bash tests/gpu/device_checks.sh tiny \
  > "$OUT/merge_tiles/checks.txt" 2>&1
echo "merge + tiles checks rc=$?: $(grep -c 'gpu_check: PASS' "$OUT/merge_tiles/checks.txt") PASS, $(grep -c FAIL "$OUT/merge_tiles/checks.txt") FAIL"
san() { CALL_SECONDS=$SECONDS SAN_DEADLINE=300 bash tests/gpu/sanitize_one.sh "$@"; }
{ san bin memcheck tiny_9x3 --attention_merge=true; san bin synccheck tiny_9x3 --attention_merge=true
  san bin racecheck tiny_9x3 --attention_merge=true; } > "$OUT/sanitize.txt" 2>&1
grep -E "==|SUMMARY|rc=" "$OUT/sanitize.txt"
echo "sanitizers done at ${SECONDS}s"
# The loader-warp model with the cp.async ring (PERFORMANCE.md "Next", item 2; ~30 s).
timeout 90 .gpu/bin/floor --mode=pipeline > "$OUT/pipeline.json" 2>&1
grep -E '"weights"' "$OUT/pipeline.json" | sed -E 's/"spin_ns": \[[0-9, ]*\], //' | cut -c1-170
echo "pipeline model done at ${SECONDS}s"
AB_TRACE_CONTEXTS=32,1024,4064 timeout 270 bash tests/gpu/ab_compare.sh A0=.gpu/a A=.gpu/bin M=.gpu/bin:--attention_merge=true \
  2>&1 | grep -E "round|FAIL|exit" | cut -c1-260
for f in "$OUT"/trace_*.json.xz; do
  r=${f%.json.xz}.report.txt
  xz -dc "$f" > /tmp/t.json && python3 py/tools/trace_report.py --trace=/tmp/t.json --bandwidth_gbps=4400 > "$r"
  echo "$(basename "$r"): $(grep -E '^(ATTENTION|ATTN_OUT) ' "$r" | awk '{print $1, "span", $3, "task", $NF}' | tr '\n' ' ')"
done
echo "A/B done at ${SECONDS}s"
python3 py/tools/bench_windows.py --config=A=.gpu/bin --config=M=.gpu/bin:--attention_merge=true \
  --contexts=256,512,1024,2048,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "done at ${SECONDS}s"
cp .gpu/call_u.sh "$OUT/"
cd "$OUT" && tar czf ../call_u.tgz . && rm -rf ./* && mv ../call_u.tgz .
