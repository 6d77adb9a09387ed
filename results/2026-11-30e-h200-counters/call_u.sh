#!/usr/bin/env bash
# Next session's first GPU call (docs/PERFORMANCE.md, "v30", "v31" and "Next (... eleventh
# session)"), run ON the GPU machine from the repo root. Here first: `bash tests/gpu/prepare_ab.sh
# 80cda5d main` (a = main before v30 and v31, bin = main; writes .gpu/ab.tar.xz, wait for
# "wrote"); carry .gpu/ab.tar.xz and this script as .gpu/call_u.sh. ~8.5 min:
# 1. main's checks at the default; the tiny models GPU = CPU and 10 x 500 tokens bit-identical
#    with --attention_merge (v30; also with every step in tiles), --qkv_counters (v31) and both;
#    memcheck, synccheck, racecheck of tiny_9x3 with v30, memcheck and synccheck with v31.
# 2. `floor --mode=pipeline` with the cp.async ring runs (PERFORMANCE.md "Next" 2).
# 3. ab_compare of A = main, M = v30, Q = v31, MQ = both (traces at 32, 1024, 4064). With v31 the
#    QKV rows end at the slowest QKV task and ATTENTION's start there (trace_report says so); the
#    traced token totals and ms/token compare directly.
# Then, within 30 s on the same warm machine, call_v.sh: bench windows of A0 (main before v30),
# A, M, Q and MQ.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz
bash tests/gpu/device_checks.sh info probe tiny golden > "$OUT/checks.txt" 2>&1
echo "main checks rc=$? at ${SECONDS}s: $(grep -c 'gpu_check: PASS' "$OUT/checks.txt") PASS, $(grep -c FAIL "$OUT/checks.txt") FAIL"
check() {  # check NAME FLAGS: the tiny stage with gpu_check FLAGS, into $OUT/NAME
  mkdir -p "$OUT/$1"
  OUT=$OUT/$1 GPU_CHECK_FLAGS="$2" bash tests/gpu/device_checks.sh tiny > "$OUT/$1/checks.txt" 2>&1
  echo "$1 ($2) rc=$?: $(grep -c 'gpu_check: PASS' "$OUT/$1/checks.txt") PASS, $(grep -c FAIL "$OUT/$1/checks.txt") FAIL"
}
check merge --attention_merge=true
check merge_tiles "--attention_merge=true --attention_tile_min=1"
check qkv --qkv_counters=true
check merge_qkv "--attention_merge=true --qkv_counters=true"
san() { CALL_SECONDS=$SECONDS SAN_DEADLINE=260 bash tests/gpu/sanitize_one.sh "$@"; }
{ san bin memcheck tiny_9x3 --attention_merge=true; san bin synccheck tiny_9x3 --attention_merge=true
  san bin memcheck tiny_9x3 --qkv_counters=true; san bin synccheck tiny_9x3 --qkv_counters=true
  san bin racecheck tiny_9x3 --attention_merge=true; } > "$OUT/sanitize.txt" 2>&1
grep -E "==|SUMMARY|rc=" "$OUT/sanitize.txt"
echo "sanitizers done at ${SECONDS}s"
timeout 90 .gpu/bin/floor --mode=pipeline > "$OUT/pipeline.json" 2>&1
grep -E '"weights"' "$OUT/pipeline.json" | sed -E 's/"spin_ns": \[[0-9, ]*\], //' | cut -c1-170
echo "pipeline model done at ${SECONDS}s"
AB_TRACE_CONTEXTS=32,1024,4064 timeout $((585 - SECONDS)) bash tests/gpu/ab_compare.sh A=.gpu/bin \
  M=.gpu/bin:--attention_merge=true Q=.gpu/bin:--qkv_counters=true MQ=.gpu/bin:--attention_merge=true,--qkv_counters=true \
  2>&1 | grep -E "round|FAIL|exit" | cut -c1-260
for f in "$OUT"/trace_*.json.xz; do
  r=${f%.json.xz}.report.txt
  xz -dc "$f" > /tmp/t.json && python3 py/tools/trace_report.py --trace=/tmp/t.json --bandwidth_gbps=4400 > "$r"
  echo "$(basename "$r"): $(grep -E '^(QKV|ATTENTION|ATTN_OUT) ' "$r" | awk '{print $1, "span", $(NF-6), "task", $NF}' | tr '\n' ' ')"
done
echo "done at ${SECONDS}s"
cp .gpu/call_u.sh "$OUT/"
cd "$OUT" && tar czf ../call_u.tgz . && rm -rf ./* && mv ../call_u.tgz .
