#!/usr/bin/env bash
# Call REAL (thirty-sixth session; docs/PERFORMANCE.md "Call REAL"), ON the GPU machine from the
# repo root, straight after a call that ran `bash tests/gpu/device_checks.sh stash_gguf_a` on the
# same (warm) machine: SmolLM2-135M-Instruct's real weights with the session's build
# (device_checks.sh probe smollm2_real: decode, gpu_check with the K/V reuse line, transformers),
# then a three-turn chat on the GPU whose timing lines say how many rows each turn kept.
# Here first: bash tests/gpu/prepare.sh; the GGUF split into .gpu/gguf_part_a (carried by the
# stash call) and .gpu/gguf_part_b; carry .gpu/bin.tar.xz, .gpu/gguf_part_b and .gpu/wheels.
set -u
[ -f /tmp/gguf_part_a ] || { echo "no stashed GGUF half: not the same machine"; exit 3; }
export OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
bash tests/gpu/device_checks.sh info probe smollm2_real > "$OUT/device_checks.txt" 2>&1
echo "device_checks rc=$?"
grep -E "output:|prompt:|K/V reuse|determinism|gpu_check: |max rel|argmax|greedy|FAIL|rror" "$OUT/device_checks.txt" | head -40
echo "--- chat, three turns, on the GPU:"
printf 'What is the capital of France?\nAnd of Italy?\nAnd of Spain?\n' | .gpu/bin/decode \
  --package=/tmp/tileinfer_models/smollm2_real.tpkg --chat --max_new_tokens=48 --device=gpu 2>&1 | tee "$OUT/chat3.txt"
(cd "$OUT" && tar czf ../call_real.tgz . && rm -rf ./* && mv ../call_real.tgz .)
