#!/usr/bin/env bash
# Call SHOW (docs/PERFORMANCE.md, "Call SHOW"), ON the GPU machine from the repo root (~6 min): the
# showcase of the two shapes with main's worker, TileInfer against torch.compile + CUDA graph
# at contexts 1 / 1024 / 4096, no traces; the 1B first, SmolLM2 in what is left.
#   bash .gpu/call_show.sh
# Here first: an archive whose .gpu/bin is main's build (CALL_ARCHIVE, default .gpu/bin.tar.xz);
# cp docs/experiments/next/call_show.sh .gpu/; carry both. Every line is also in call.log
# ($OUT/call_show.tgz).
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_9x3 call_begin "${CALL_ARCHIVE:-.gpu/bin.tar.xz}"
for m in llama1b_shape:${SHOW_END_1B:-230} smollm2_shape:${SHOW_END:-380}; do
  model=${m%%:*}; end=${m#*:}
  SHOWCASE_TRACE=0 SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile --contexts=1,1024,4096" \
    timeout $((end - SECONDS)) bash tests/gpu/showcase.sh "$model" > "$OUT/showcase_$model.log" 2>&1
  echo "$model showcase rc=$? at ${SECONDS}s"
  grep -E "^\| [0-9]|^\| tileinfer|^\| torch|^\| floor|token:" "$OUT/showcase_$model.log" | head -20
  cp "$OUT/floor.json" "$OUT/$model/floor.json" 2>/dev/null
done
call_end call_show .gpu/call_show.sh
