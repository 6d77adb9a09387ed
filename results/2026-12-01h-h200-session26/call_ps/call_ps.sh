#!/usr/bin/env bash
# Call PS (docs/PERFORMANCE.md "The pipeline model at SmolLM2's shape"), ON the GPU machine from
# the repo root (~2 min): floor --mode=pipeline at SmolLM2-135M's layer (30 layers; 8 / 4 / 40 KB a
# block in the QKV / ATTN_OUT / FFN waves; 4 KB chunks) and, for reference, at the 1B's default
# shape; loads against the rings and a producer per warp, with and without the chain's spins.
#   bash .gpu/call_ps.sh
# Here first: bash tests/gpu/prepare.sh; cp docs/experiments/next/call_ps.sh .gpu/; carry
# .gpu/bin.tar.xz and .gpu/call_ps.sh.
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
tar -C .gpu -xJf .gpu/ab.tar.xz || { echo "cannot unpack .gpu/ab.tar.xz" >&2; exit 1; }
# SmolLM2 at context 32, v48's trace (docs/PERFORMANCE.md "The gap by cause"): norms and merges
# ~0.8 us before each weight wave, the attention ~4.2 us above its ideal; no reduce wave since v48
# (the model keeps its barrier).
RUNS=1,2,3,4,12,13,50,51,54
timeout 120 .gpu/bin/floor --mode=pipeline --pipeline_layers=30 --pipeline_wave_bytes=8192,4096,40960 \
  --pipeline_chunk=4096 --pipeline_norm_ns=800 --pipeline_attention_ns=4200 --pipeline_reduce_ns=0 \
  --pipeline_runs=$RUNS > "$OUT/pipeline_smollm2.json" 2> "$OUT/pipeline_smollm2.err"
echo "smollm2 rc=$?"; cat "$OUT/pipeline_smollm2.err"
timeout 120 .gpu/bin/floor --mode=pipeline --pipeline_runs=1,2,3,4,50,51 > "$OUT/pipeline_1b.json" 2> "$OUT/pipeline_1b.err"
echo "1b rc=$?"; cat "$OUT/pipeline_1b.err"
for f in "$OUT"/pipeline_*.json; do
  echo "$f"; python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('floor us a layer', d['floor_us_per_layer'])
for r in d['runs']: print(r['run'], r['weights'], r['chunk'], r['stages'], r['spin_ns'], r['warp_pipeline'], r['us_per_layer'], r['block0_waits_us_per_layer'])" "$f"
done
cp .gpu/call_ps.sh "$OUT/"
