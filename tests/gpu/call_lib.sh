# The steps every measurement call script repeats, ON the GPU machine from the repo root.
# Source it from a call script (docs/experiments/next/*.sh), then:
#   call_begin ARCHIVE...            from here on copy the script's whole output to $CALL_LOG
#                                    (call_end packs it as $OUT/call.log: the device returns only
#                                    the output's last 12,000 characters); unpack each
#                                    .gpu/*.tar.xz, probe with .gpu/bin/probe into
#                                    $W/target.json, make the packages of $CALL_MODELS there
#                                    (default llama1b_shape,smollm2_shape) and print each
#                                    build's sm_90 registers line of each worker kernel
#                                    (.gpu/*/worker_kernel_worker.ptxas.txt).
#                                    Call it with its output unredirected: the copy is set up
#                                    inside it, so `call_begin ... >/dev/null` logs nothing after
#                                    it returns
#   call_trace DIR NAME MODEL CONTEXTS [GPU_CHECK_FLAG...]
#                                    one traced generation of $W/MODEL.tpkg by DIR/gpu_check; per
#                                    context C: $OUT/trace_MODEL_NAME_C.json.xz (for
#                                    py/tools/trace_compare.py), .report.txt (trace_report.py)
#                                    and a line with the wave kinds' median tasks and the token
#   call_logits NAME=DIR[:FLAG,FLAG...]...
#                                    per model of $CALL_MODELS: each build's GPU logits at contexts
#                                    1, 32, 1024 (gpu_check --logits_out, plus the config's
#                                    gpu_check flags, as bench_windows.py's --config takes them),
#                                    each compared with the first NAME's by cmp
#                                    ("bit-identical" or "FAIL, they differ")
#   call_checks                      .gpu/bin: tiny models GPU = CPU (10 x 500 tokens bit-identical),
#                                    golden (device_checks.sh probe tiny golden, into $OUT/tiny_bin),
#                                    memcheck and synccheck on tiny_9x3 (sanitize_one.sh)
#   call_generation MODEL...         .gpu/bin: each model of $W GPU = CPU at context 1, logits at 100 and
#                                    1000, 3 x 128 tokens bit-identical, gpu_check's step-order check;
#                                    $OUT/gpu_check_MODEL.txt and a line each
#   call_tiny_tiles MODEL...         .gpu/bin: each tiny model of $W GPU = CPU (10 x 500 tokens bit-identical)
#                                    with ATTENTION's default tile threshold and with tiles in every
#                                    step (--attention_tile_min=1); $OUT/gpu_check_MODEL[_tiles].txt
#   call_showcase [END_S]            tests/gpu/showcase.sh of .gpu/bin (TileInfer and torch.compile
#                                    unless SHOWCASE_FLAGS says otherwise): the 1B shape with its
#                                    traces (at most 300 s), then the SmolLM2 shape without, cut at
#                                    END_S seconds into the call (default 530); floor.json into each
#                                    model's folder
#   call_other_planner TAR DIR       packages of the big shapes' checkpoints (call_begin's) planned
#                                    by another revision's planner: TAR from `git archive
#                                    --prefix=main_py/ REV py/planner`, into $W/DIR (a build of
#                                    another package format reads them: bench_windows.py
#                                    --config_packages)
#   call_end NAME SCRIPT             copy SCRIPT to $OUT and pack $OUT as $OUT/NAME.tgz (a call
#                                    returns few files)
# $OUT (default /tmp/gpu_out) and W=/tmp/tileinfer_models as device_checks.sh uses them;
# compute-sanitizer runs: tests/gpu/sanitize_one.sh.
OUT=${OUT:-/tmp/gpu_out}
export OUT
export PYTHONPATH=py:.
W=/tmp/tileinfer_models
CALL_LOG=/tmp/call_output.log

call_begin() {
  local a d
  mkdir -p "$OUT" "$W"
  : > "$CALL_LOG"  # a warm machine keeps /tmp: the log of a call before this one
  exec > >(tee -a "$CALL_LOG") 2>&1
  for a in "$@"; do tar -C .gpu -xJf "$a" || { echo "call_begin: cannot unpack $a" >&2; return 1; }; done
  .gpu/bin/probe > "$W/target.json" || { echo "call_begin: .gpu/bin/probe failed" >&2; return 1; }
  python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" \
    --models="${CALL_MODELS:-llama1b_shape,smollm2_shape}" 2>&1 | grep -v "^I"
  for d in .gpu/*/; do
    [ -f "$d/worker_kernel_worker.ptxas.txt" ] &&
      echo "${d%/}: $(bash tests/gpu/worker_registers.sh "$d/worker_kernel_worker.ptxas.txt")"
  done
  return 0
}

call_trace() {
  local dir=$1 name=$2 model=$3 contexts=$4 c r
  shift 4
  "$dir/gpu_check" --package="$W/$model.tpkg" --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
    --check_target=false "$@" --trace_out="$W/trace_${model}_$name" --trace_contexts="$contexts" | grep -E "FAIL|on GPU"
  for c in ${contexts//,/ }; do
    r="$OUT/trace_${model}_${name}_$c"
    xz -c "$W/trace_${model}_${name}_$c.json" > "$r.json.xz"
    python3 py/tools/trace_report.py --trace="$W/trace_${model}_${name}_$c.json" --bandwidth_gbps=4400 > "$r.report.txt" 2>&1
    echo "$model $name $c: $(awk '/^(QKV|ATTENTION|ATTN_OUT|FFN) /{printf "%s %s  ", $1, $NF}' "$r.report.txt")$(grep -oE '^token: [0-9.]+ us' "$r.report.txt")"
  done
}

call_logits() {
  local m cfg name rest dir first="" models=${CALL_MODELS:-llama1b_shape,smollm2_shape}
  local -a extra
  for m in ${models//,/ }; do
    for cfg in "$@"; do
      name=${cfg%%=*}; rest=${cfg#*=}; dir=${rest%%:*}; extra=()
      [ "$rest" = "$dir" ] || IFS=, read -ra extra <<< "${rest#*:}"
      [ -n "$first" ] || first=$name
      "$dir/gpu_check" --package="$W/$m.tpkg" --contexts=1,32,1024 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
        --check_target=false ${extra[@]+"${extra[@]}"} --logits_out="$W/logits_${m}_$name.bin" | grep -E "FAIL"
      [ "$name" = "$first" ] && continue
      if cmp -s "$W/logits_${m}_$first.bin" "$W/logits_${m}_$name.bin"; then
        echo "$m logits $name = $first: bit-identical"
      else
        echo "$m logits $name = $first: FAIL, they differ"
      fi
    done
  done
}

call_checks() {
  local tool f pass=0 models=0 rc golden
  mkdir -p "$OUT/tiny_bin"
  # Into a file, then read: a `| head` on the live output ended device_checks.sh by SIGPIPE once
  # head had its lines, which left the last tiny models and the golden stage unrun (calls HK to UX).
  OUT=$OUT/tiny_bin bash tests/gpu/device_checks.sh probe tiny golden > "$OUT/tiny_bin/device_checks.txt" 2>&1
  rc=$?
  grep -E "FAIL|[Ee]rror:|ERROR" "$OUT/tiny_bin/device_checks.txt" | sed -n 1,20p  # not "max rel error"
  for f in "$OUT"/tiny_bin/gpu_check_tiny_*.txt; do
    models=$((models + 1))
    grep -q "^gpu_check: PASS" "$f" && pass=$((pass + 1))
  done
  golden=$(grep -c '^gpu_check: PASS' "$OUT/tiny_bin/gpu_golden_test.txt" 2>/dev/null)
  echo "call_checks: device_checks rc=$rc; tiny models $pass of $models PASS; golden ${golden:-0} of 2 PASS"
  for tool in memcheck synccheck; do CALL_SECONDS=$SECONDS bash tests/gpu/sanitize_one.sh bin $tool tiny_9x3; done
}

call_generation() {
  local m
  for m in "$@"; do
    timeout 120 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,100,1000 --cpu_contexts=1 --runs=3 --tokens=128 \
      --sampling_checks=0 --cpu_generate_tokens=0 > "$OUT/gpu_check_$m.txt" 2>&1
    echo "$m gpu_check rc=$?: $(grep -E 'step order|determinism|gpu_check: (PASS|FAIL)' "$OUT/gpu_check_$m.txt" | tr '\n' ' ')"
  done
}

call_tiny_tiles() {
  local m flag f
  for m in "$@"; do
    for flag in "" --attention_tile_min=1; do
      f="$OUT/gpu_check_$m${flag:+_tiles}.txt"
      # shellcheck disable=SC2086  # flag: one word or none
      timeout 60 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,2,17,100,383,384,385,600 --runs=10 \
        --tokens=500 $flag > "$f" 2>&1
      echo "$m ${flag:-default}: rc=$? $(grep -cE 'FAIL' "$f") FAIL lines; $(tail -1 "$f")"
    done
  done
}

call_showcase() {
  local end=${1:-530} flags=${SHOWCASE_FLAGS:---runtimes=tileinfer,torch_compile}
  SHOWCASE_FLAGS=$flags timeout 300 bash tests/gpu/showcase.sh llama1b_shape 2>&1 |
    grep -E "^\| [0-9]|^\| tileinfer|^\| torch|^\| floor|token:" | sed -n 1,14p  # not head: see call_checks
  cp "$OUT/floor.json" "$OUT/llama1b_shape/floor.json" 2>/dev/null
  echo "llama1b_shape showcase at ${SECONDS}s"
  if [ $((end - SECONDS)) -lt 30 ]; then echo "smollm2_shape showcase skipped: out of time at ${SECONDS}s"; return 0; fi
  SHOWCASE_TRACE=0 SHOWCASE_FLAGS=$flags timeout $((end - SECONDS)) bash tests/gpu/showcase.sh smollm2_shape 2>&1 |
    grep -E "^\| [0-9]|^\| tileinfer|^\| torch|^\| floor" | sed -n 1,12p
  cp "$OUT/floor.json" "$OUT/smollm2_shape/floor.json" 2>/dev/null
  echo "smollm2_shape showcase at ${SECONDS}s"
}

call_other_planner() {
  local tar=$1 dir=$2 m models=${CALL_MODELS:-llama1b_shape,smollm2_shape}
  tar -C .gpu -xf "$tar" || { echo "call_other_planner: cannot unpack $tar" >&2; return 1; }
  mkdir -p "$W/$dir"
  for m in ${models//,/ }; do
    PYTHONPATH=.gpu/main_py/py python3 .gpu/main_py/py/planner/main.py --checkpoint="$W/$m" \
      --target="$W/target.json" --out="$W/$dir/$m.tpkg" --max_context=4096 2>&1 | grep -E "^plan:|error"
  done
}

call_end() {
  local name=$1 script=$2
  cp "$script" "$OUT/"
  cp "$CALL_LOG" "$OUT/call.log" 2>/dev/null
  (cd "$OUT" && tar czf "../$name.tgz" . && rm -rf ./* && mv "../$name.tgz" .)
}
