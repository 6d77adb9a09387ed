#!/usr/bin/env bash
# The GPU checks, run ON the GPU machine from the repo root (tests/gpu/README.md):
#   bash tests/gpu/device_checks.sh STAGE...   stages: see the case below and tests/gpu/README.md
# Binaries come from tests/gpu/prepare.sh (.gpu/bin); results go to $OUT (or /tmp/gpu_out).
# GPU_CHECK_FLAGS: extra gpu_check flags of the tiny stage (e.g. --l2_prefetch_ahead=1+2).
# BIN_DIR: the binaries to check (default .gpu/bin; e.g. .gpu/b of tests/gpu/prepare_ab.sh).
set -uo pipefail
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
B=${BIN_DIR:-.gpu/bin}
[ -d $B ] || [ ! -f .gpu/bin.tar.xz ] || tar -C .gpu -xJf .gpu/bin.tar.xz  # a packed carry
W=/tmp/tileinfer_models   # persists while the machine stays warm
mkdir -p "$W"
export PYTHONPATH=py:.
export PYTHONUNBUFFERED=1
rc=0
step() { echo; echo "=== $* ==="; }
for stage in "$@"; do
  case "$stage" in
    info)
      step info
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,memory.total --format=csv
      grep -E "registers|spill" $B/worker_kernel_worker.ptxas.txt | tail -2 ;;
    floor)
      step "streaming-read bandwidth (the floor's denominator)"
      $B/floor | tee "$OUT/floor.json" || rc=1 ;;
    probe)
      step probe
      $B/probe | tee "$OUT/target_probe.json" || rc=1
      cp "$OUT/target_probe.json" "$W/target.json" ;;
    golden)
      step "golden packages (the gpu-tagged Bazel test)"
      GPU_CHECK=$B/gpu_check bash tests/gpu/gpu_golden_test.sh > "$OUT/gpu_golden_test.txt" 2>&1 || rc=1
      grep -E "PASS|FAIL" "$OUT/gpu_golden_test.txt" ;;
    tiny)
      step "tiny models (probed target)"
      python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=tiny || rc=1
      for m in tiny_9x3 tiny_untied tiny_ties tiny_9x3_mc72 tiny_untied_mc40 tiny_hd80_g6 tiny_g8 tiny_hd12 tiny_h38 tiny_hd128_g3 tiny_hd128_g4 tiny_h2304; do  # tiny_inf: see the nonfinite stage
        # shellcheck disable=SC2086  # GPU_CHECK_FLAGS: words
        $B/gpu_check --package="$W/$m.tpkg" --contexts=1,2,17,100,383,384,385,600 --runs=10 --tokens=500 \
          ${GPU_CHECK_FLAGS:-} | tee "$OUT/gpu_check_$m.txt" || rc=1
      done ;;
    tiles)
      step "tiny models with every step's ATTENTION in tiles (--attention_tile_min=1): results in \$OUT/tiles_all"
      mkdir -p "$OUT/tiles_all"
      OUT=$OUT/tiles_all GPU_CHECK_FLAGS="--attention_tile_min=1 ${GPU_CHECK_FLAGS:-}" bash "$0" tiny || rc=1 ;;
    sanitize)
      step "compute-sanitizer: stepwise checks incl. sampling and streaming, then 300-token decodes across the attention chunks"
      python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=tiny || rc=1
      ids=$(python3 -c "print(','.join(str(1 + (i * 37) % 90) for i in range(100)))")  # 100 prompt ids
      for tool in memcheck racecheck synccheck; do
        timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 $B/gpu_check --package="$W/tiny_9x3.tpkg" \
          --contexts=1,3,130 --cpu_contexts=3 --runs=1 --tokens=70 --sampling_checks=14 > "$OUT/sanitize_$tool.txt" 2>&1
        r=$?; echo "$tool gpu_check: exit $r"; tail -2 "$OUT/sanitize_$tool.txt"; [ $r = 0 ] || rc=1
        for opts in "" "--temperature=0.9 --top_k=20 --top_p=0.9 --seed=3"; do
          kind=greedy; [ -n "$opts" ] && kind=sampled
          f="$W/sanitize_decode_${tool}_$kind.txt"  # whole logs stay there; one summary file returns
          timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 $B/decode --package="$W/tiny_9x3.tpkg" \
            --prompt_ids=$ids --max_new_tokens=300 --ignore_eos --device=gpu $opts > "$f" 2>&1
          r=$?; echo "$tool decode 100+300 tokens $kind: exit $r: $(grep -E 'SUMMARY|tokens/s' "$f" | tr '\n' ' ')" \
            | tee -a "$OUT/sanitize_decodes.txt"
          [ $r = 0 ] || { rc=1; tail -40 "$f" >> "$OUT/sanitize_decodes.txt"; }
        done
      done ;;
    sampling)
      step "in-kernel sampling: equal to the CPU sampler on the worker's logits; cost against greedy; sanitizers"
      python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=tiny_9x3,smollm2_shape,llama1b_shape || rc=1
      for tool in memcheck racecheck; do
        timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 $B/gpu_check --package="$W/tiny_9x3.tpkg" \
          --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=70 --sampling_checks=21 --stream_checks=false \
          --sampler_rows=80 > "$OUT/sampling_$tool.txt" 2>&1
        r=$?; echo "$tool: exit $r: $(grep -E 'sampling at|SUMMARY' "$OUT/sampling_$tool.txt" | tr '\n' ' ')"; [ $r = 0 ] || rc=1
      done
      for m in smollm2_shape llama1b_shape; do
        rows=0; [ $m = smollm2_shape ] && rows=2000  # adversarial synthetic rows, once
        $B/gpu_check --package="$W/$m.tpkg" --contexts=1,4096 --cpu_contexts=1 --runs=3 --tokens=256 --stream_checks=false \
          --cpu_generate_tokens=0 --sampler_rows=$rows | tee "$OUT/sampling_$m.txt" | grep -E "sampl|determinism|PASS|FAIL" || rc=1
      done ;;
    trace)
      step "worker trace: per task and barrier timings of one step at contexts 32 and 4064 (py/tools/trace_report.py)"
      python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=smollm2_shape,llama1b_shape || rc=1
      for m in llama1b_shape smollm2_shape; do
        $B/gpu_check --package="$W/$m.tpkg" --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
          --trace_out="$W/trace_$m" --trace_contexts=32,4064 | grep -E "trace|PASS|FAIL" || rc=1
        xz -c "$W/trace_${m}_32.json" > "$OUT/trace_${m}_32.json.xz"
        xz -c "$W/trace_${m}_4064.json" > "$OUT/trace_${m}_4064.json.xz"
      done ;;
    soak)
      step "soak: 20 generations of 1000 tokens, bit-identical (tokens and final logits)"
      python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=llama1b_shape,smollm2_shape || rc=1
      for m in llama1b_shape smollm2_shape; do
        $B/gpu_check --package="$W/$m.tpkg" --contexts=1 --cpu_contexts=1 --runs=20 --tokens=1000 --sampling_checks=0 \
          --stream_checks=false --cpu_generate_tokens=0 | tee "$OUT/soak_$m.txt" | grep -E "determinism|seeded|PASS|FAIL" || rc=1
      done ;;
    faults)
      step "faults: a grid that cannot be co-resident; out of memory at load"
      python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=tiny_9x3,llama1b_shape || rc=1
      python3 -c "import json; t = json.load(open('$W/target.json')); t['workers_per_sm'] = 4; json.dump(t, open('$W/target_x4.json', 'w'))"
      python3 py/planner/main.py --checkpoint="$W/tiny_9x3" --target="$W/target_x4.json" --out="$W/tiny_x4.tpkg" --max_context=64 2>&1 | tail -1
      timeout 60 $B/decode --package="$W/tiny_x4.tpkg" --prompt_ids=1,2,3 --max_new_tokens=4 --device=gpu > "$OUT/fault_grid.txt" 2>&1
      r=$?; echo "oversize grid: exit $r: $(grep -o 'error: .*' "$OUT/fault_grid.txt")"
      { [ $r = 1 ] && grep -q "re-plan" "$OUT/fault_grid.txt"; } || { echo FAIL; rc=1; }
      $B/gpu_check --package="$W/llama1b_shape.tpkg" --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 --oom_check \
        | tee "$OUT/fault_oom.txt" | grep -E "memory|PASS|FAIL" || rc=1 ;;
    smollm2_shape|llama1b_shape|llama3b_shape|llama8b_shape)
      step "$stage"
      python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=$stage || rc=1
      tol=$(bash tests/gpu/gpu_check_tolerance.sh $stage)  # the 8B's is above the default
      $B/gpu_check --package="$W/$stage.tpkg" --contexts=1,2,100,383,384,385,1000,4096 --cpu_contexts=1,2,100 \
        --tolerance=$tol --runs=10 --tokens=256 --logits_out="$W/$stage.logits" --tokens_out="$W/$stage.tokens" \
        | tee "$OUT/gpu_check_$stage.txt" || rc=1
      python3 py/tools/hf_compare.py --checkpoint="$W/$stage" --logits="$W/$stage.logits" \
        --tokens="$W/$stage.tokens" --json_out="$OUT/hf_compare_$stage.json" 2>&1 | grep -v Warning \
        | tee "$OUT/hf_compare_$stage.txt" || rc=1 ;;
    api_gpu)
      step "decode (public API) on the GPU: ids, a text prompt, a two-turn chat; each as the CPU executor's"
      python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=tiny_9x3,tiny_bytes || rc=1
      # tiny_bytes: the other tiny tokenizers have no token for "\n", which the chat template writes.
      for dev in gpu cpu; do
        { $B/decode --package="$W/tiny_9x3.tpkg" --prompt_ids=1,5,7 --max_new_tokens=70 --ignore_eos --device=$dev &&
          $B/decode --package="$W/tiny_bytes.tpkg" --prompt="hello world" --max_new_tokens=8 --device=$dev &&
          printf 'hi\nagain\n' | $B/decode --package="$W/tiny_bytes.tpkg" --chat --max_new_tokens=8 --ignore_eos --device=$dev
        } > "$OUT/api_$dev.txt" 2> "$OUT/api_${dev}_err.txt" || { echo "FAIL: decode on the $dev exited $?"; rc=1; }
        grep -v "ms/token" "$OUT/api_$dev.txt" > "$OUT/api_${dev}_text.txt"  # the times differ
      done
      tail -3 "$OUT/api_gpu.txt"
      if [ -s "$OUT/api_gpu_text.txt" ] && cmp -s "$OUT/api_gpu_text.txt" "$OUT/api_cpu_text.txt"; then
        echo "api_gpu: the GPU's ids, text and chat turns equal the CPU's ($(grep -c '^ids:' "$OUT/api_gpu_text.txt") ids lines)"
      else
        echo "FAIL: the GPU's decode output differs from the CPU's (\$OUT/api_{gpu,cpu}_text.txt)"; rc=1
      fi ;;
    nonfinite)
      step "a non-finite logit, or a residual beyond the fixed-point range, stops the request (GPU and CPU)"
      python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=tiny_inf,tiny_big || rc=1
      for m in tiny_inf tiny_big; do
        for dev in gpu cpu; do
          $B/decode --package="$W/$m.tpkg" --prompt_ids=1,2,3 --max_new_tokens=4 --device=$dev > "$OUT/nonfinite_${m}_$dev.txt" 2>&1
          r=$?; echo "$m $dev: exit $r: $(grep -o 'error: .*' "$OUT/nonfinite_${m}_$dev.txt")"
          { [ $r = 1 ] && grep -q "non-finite logit" "$OUT/nonfinite_${m}_$dev.txt"; } || { echo "FAIL"; rc=1; }
        done
      done
      # A request stopped at the token before a non-finite step (the GPU runs that step) leaves the
      # next request what a run from position 0 gives.
      $B/gpu_check --package="$W/tiny_big.tpkg" --stop_before_nonfinite_check > "$OUT/nonfinite_stop.txt" 2>&1 || rc=1
      grep -E "stop before|gpu_check: " "$OUT/nonfinite_stop.txt" ;;
    cpu_long)
      step "GPU vs CPU executor at every context up to 4096 (SmolLM2 shape)"
      python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=smollm2_shape || rc=1
      $B/gpu_check --package="$W/smollm2_shape.tpkg" --contexts=1,2,100,383,384,385,1000,4096 --runs=0 \
        | tee "$OUT/gpu_check_cpu_long.txt" || rc=1 ;;
    stash_gguf_a)
      # The real model's GGUF (98 MB) is over one call's 64 MiB: it travels in two halves.
      cp .gpu/gguf_part_a /tmp/gguf_part_a && echo "stashed $(stat -c %s /tmp/gguf_part_a) bytes" ;;
    smollm2_real)
      step "SmolLM2-135M-Instruct, real weights"
      python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/wheels/*.whl && export PYTHONPATH=py:.:/tmp/site
      cat /tmp/gguf_part_a .gpu/gguf_part_b > "$W/smollm2.gguf" || rc=1
      python3 py/tools/gguf_import.py --gguf="$W/smollm2.gguf" --hf_out="$W/smollm2_real" --overwrite 2>&1 | tail -1
      python3 py/planner/main.py --checkpoint="$W/smollm2_real" --target="$W/target.json" --out="$W/smollm2_real.tpkg" 2>&1 | tail -3
      { $B/decode --package="$W/smollm2_real.tpkg" --prompt_ids=1,4093,198,1780,314,260,3575,282,4649,47,2,198,1,520,9531,198 \
          --max_new_tokens=48 --device=gpu
        echo "--- text prompt, sampled (T=0.7, top_k=40, top_p=0.95, seed 1), twice:"
        for i in 1 2; do $B/decode --package="$W/smollm2_real.tpkg" --prompt="Three facts about the ocean:" \
          --max_new_tokens=64 --device=gpu --temperature=0.7 --top_k=40 --top_p=0.95 --seed=1; done
        echo "--- chat (stops at <|im_end|>):"
        printf 'What is the capital of France?\nAnd of Italy?\n' | $B/decode --package="$W/smollm2_real.tpkg" --chat \
          --max_new_tokens=64 --device=gpu; } 2>&1 | tee "$OUT/decode_smollm2_real.txt" || rc=1
      $B/gpu_check --package="$W/smollm2_real.tpkg" --contexts=1,2,100,383,384,385,1000,4096 --cpu_contexts=1,2,100 \
        --prompt_ids=1,4093,198,1780,314,260,3575,282,4649,47,2,198,1,520,9531,198 \
        --runs=10 --tokens=256 --logits_out="$W/smollm2_real.logits" --tokens_out="$W/smollm2_real.tokens" \
        | tee "$OUT/gpu_check_smollm2_real.txt" || rc=1
      python3 py/tools/hf_compare.py --checkpoint="$W/smollm2_real" --logits="$W/smollm2_real.logits" \
        --tokens="$W/smollm2_real.tokens" --json_out="$OUT/hf_compare_smollm2_real.json" 2>&1 | grep -v Warning \
        | tee "$OUT/hf_compare_smollm2_real.txt" || rc=1 ;;
    *) echo "unknown stage $stage"; rc=2 ;;
  esac
done
exit $rc
