#!/usr/bin/env bash
# Next session's first GPU call (docs/PERFORMANCE.md, "Next (written 2026-11-30, end of the
# tenth session)", item 0), run ON the GPU machine from the repo root. Here first:
# `bash tests/gpu/prepare.sh` on main (writes .gpu/bin.tar.xz), then carry .gpu/bin.tar.xz and this
# script as .gpu/call_q.sh. ~5 min: main's tiny checks and golden packages at the default and with
# every step in tiles (--attention_tile_min=1: empty chunks take the tiles since the per-step
# choice), sanitizers with every step in tiles. Then, within 30 s, call_r.sh on the same warm
# machine: the full showcase (the llama.cpp build does not fit one carry with the tree and a build).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
export PYTHONPATH=py:.
bash tests/gpu/device_checks.sh info probe tiny tiles golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -40
echo "checks at ${SECONDS}s"
san() { CALL_SECONDS=$SECONDS SAN_DEADLINE=560 bash tests/gpu/sanitize_one.sh "$@"; }
{ san bin memcheck tiny_9x3 --attention_tile_min=1; san bin memcheck tiny_hd80_g6 --attention_tile_min=1
  san bin synccheck tiny_9x3 --attention_tile_min=1; san bin racecheck tiny_9x3 --attention_tile_min=1
  san bin racecheck tiny_hd80_g6 --attention_tile_min=1; } 2>&1 | tee "$OUT/sanitize.txt"
echo "done at ${SECONDS}s"
cp .gpu/call_q.sh "$OUT/"
cd "$OUT" && tar czf ../call_q.tgz . && rm -rf ./* && mv ../call_q.tgz .
