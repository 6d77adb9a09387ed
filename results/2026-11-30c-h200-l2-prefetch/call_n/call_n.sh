#!/usr/bin/env bash
# GPU call N (docs/PERFORMANCE.md, "v28"), run ON the GPU machine from the repo root.
# Here first: `bash tests/gpu/prepare_ab.sh 54845ef exp/attn-hybrid` (a = W, main; bin = v28,
# tiles from 128 positions by default), then carry .gpu/ab.tar.xz and this script as
# .gpu/call_n.sh. ~8 min: v28's tiny checks and golden packages at the default and with every
# chunk in tiles (--attention_tile_min=1); the A/B of W against v28 at tile_min 128 (H), 64,
# 192 and off (1,000,000: AttendChunk only, the code present) with traces at 32, 1024, 2048,
# 4064; sanitizers with every chunk in tiles.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -30
mkdir -p "$OUT/tiles_all"
OUT=$OUT/tiles_all GPU_CHECK_FLAGS=--attention_tile_min=1 bash tests/gpu/device_checks.sh tiny 2>&1 |
  grep -E "PASS|FAIL|error" | head -20
echo "checks at ${SECONDS}s"
AB_TRACE_CONTEXTS=32,1024,2048,4064 bash tests/gpu/ab_compare.sh W=.gpu/a H=.gpu/bin H64=.gpu/bin:--attention_tile_min=64 \
  H192=.gpu/bin:--attention_tile_min=192 Hoff=.gpu/bin:--attention_tile_min=1000000 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
san() { CALL_SECONDS=$SECONDS SAN_DEADLINE=560 bash tests/gpu/sanitize_one.sh "$@"; }
{ san bin memcheck tiny_9x3 --attention_tile_min=1; san bin memcheck tiny_hd80_g6 --attention_tile_min=1
  san bin synccheck tiny_9x3 --attention_tile_min=1; san bin racecheck tiny_9x3 --attention_tile_min=1; } 2>&1 |
  tee "$OUT/sanitize.txt"
echo "done at ${SECONDS}s"
cp .gpu/call_n.sh "$OUT/"
cd "$OUT" && tar czf ../call_n.tgz . && rm -rf ./* && mv ../call_n.tgz .
