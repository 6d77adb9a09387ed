#!/usr/bin/env bash
# GPU call M: the showcase of one build for one model, on a fresh or warm machine.
#   bash .gpu/call_m.sh MODEL    MODEL: llama1b_shape | smollm2_shape
# Carry .gpu/showbin.tar.xz (bench, probe, floor of the build shown: tar -C .gpu/<build> -cJf
# .gpu/showbin.tar.xz bench probe floor), .gpu/llamacpp_bin.part_a?, .gpu/wheels and this
# script as .gpu/call_m.sh: with the tracked tree that is ~66.8 MB of the carry's 64 MiB, so
# nothing else fits. ~5 min for the 1B on a fresh machine (the synthetic checkpoint is made
# first), less for SmolLM2.
set -u
MODEL=${1:?usage: call_m.sh llama1b_shape|smollm2_shape}
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT" .gpu/bin
tar -C .gpu/bin -xJf .gpu/showbin.tar.xz
export PYTHONPATH=py:.
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
SHOWCASE_TRACE=0 timeout 570 bash tests/gpu/showcase.sh "$MODEL" 2>&1 | grep -v "^I1" | tail -30
echo "$MODEL done at ${SECONDS}s rc=${PIPESTATUS[0]}"
cp "$OUT/floor.json" "$OUT/$MODEL/floor.json"
cp .gpu/call_m.sh "$OUT/"
cd "$OUT" && tar czf ../call_m.tgz . && rm -rf ./* && mv ../call_m.tgz .
