#!/usr/bin/env bash
# Call T (eleventh session), a fresh machine start. .gpu/ab.tar.xz: a = main 8296ca8
# (attention_tile_min 65), bin = exp/merge-prefetch (v29: ATTN_OUT's later merge loads
# prefetched into L1 before phase 1).
# 1. v29's checks: tiny models GPU = CPU (default and every step in tiles), golden, memcheck.
# 2. A against M: one traced step each at 1024 and 4064 (both shapes), then bench windows at
#    256-4096 in three interleaved blocks.
# 3. The showcase (TileInfer and torch.compile + CUDA graph, both shapes) of the faster build
#    at the 1B's 4096 window (M unless A is faster there).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT/bench"
export PYTHONPATH=py:.
W=/tmp/tileinfer_models
tar -C .gpu -xJf .gpu/ab.tar.xz
bash tests/gpu/device_checks.sh info probe tiny tiles golden > "$OUT/checks.txt" 2>&1
echo "checks rc=$? at ${SECONDS}s: $(grep -c 'gpu_check: PASS' "$OUT/checks.txt") PASS, $(grep -c FAIL "$OUT/checks.txt") FAIL"
CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin memcheck tiny_9x3 2>&1 | tail -3 | tee "$OUT/sanitize.txt"
python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=smollm2_shape,llama1b_shape 2>&1 | grep -v "^I" | tail -3
echo "models at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  for side in A M; do
    d=.gpu/a; [ $side = M ] && d=.gpu/bin
    $d/gpu_check --package="$W/$m.tpkg" --check_target=false --contexts=1 --cpu_contexts=1 --runs=1 --tokens=64 \
      --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 --trace_out="$W/trace_${m}_$side" \
      --trace_contexts=1024,4064 2>&1 | grep -E "trace at|FAIL"
    for c in 1024 4064; do
      xz -c "$W/trace_${m}_${side}_$c.json" > "$OUT/trace_${m}_${side}_$c.json.xz"
      python3 py/tools/trace_report.py --trace="$W/trace_${m}_${side}_$c.json" --bandwidth_gbps=4400 \
        > "$OUT/trace_${m}_${side}_$c.report.txt"
      echo "$m $side $c: $(grep -E '^ATTN_OUT' "$OUT/trace_${m}_${side}_$c.report.txt")"
      tail -1 "$OUT/trace_${m}_${side}_$c.report.txt"
    done
  done
done
echo "traces at ${SECONDS}s"
cmds="context 256 7\ncontext 512 7\ncontext 1024 7\ncontext 2048 7\ncontext 4096 7\nquit\n"
for block in 1 2 3; do
  for m in llama1b_shape smollm2_shape; do
    for side in A M; do
      d=.gpu/a; [ $side = M ] && d=.gpu/bin
      printf "$cmds" | timeout 60 $d/bench --package="$W/$m.tpkg" --check_target=false \
        > "$OUT/bench/${m}_${side}_$block.jsonl" 2>/dev/null || echo "bench $m $side $block rc=$?"
    done
  done
done
echo "bench at ${SECONDS}s"
winner=$(python3 - <<'PY'
import glob, json, os, statistics, collections, sys
d = collections.defaultdict(list)
for f in sorted(glob.glob(os.environ["OUT"] + "/bench/*.jsonl")):
    m, side, _ = os.path.basename(f)[:-6].rsplit("_", 2)
    for line in open(f):
        r = json.loads(line)
        if "context" in r: d[(m, side, r["context"])] += r["ms_per_token"]
cs = (256, 512, 1024, 2048, 4096)
for m in ("llama1b_shape", "smollm2_shape"):
    print(m, "median ms/token (21 windows)", file=sys.stderr)
    print("side " + "  ".join("%7d" % c for c in cs), file=sys.stderr)
    for side in "AM":
        print("%4s " % side + "  ".join("%7.4f" % statistics.median(d[(m, side, c)]) for c in cs), file=sys.stderr)
a, mm = (statistics.median(d[("llama1b_shape", s, 4096)]) for s in "AM")
print("A" if a < mm else "M")
PY
)
echo "showcase build: $winner"
if [ "$winner" = A ]; then mv .gpu/bin .gpu/m && mv .gpu/a .gpu/bin; fi
for m in llama1b_shape smollm2_shape; do
  SHOWCASE_TRACE=0 SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile" timeout $((592 - SECONDS)) \
    bash tests/gpu/showcase.sh $m 2>&1 | grep -E "^\| [0-9]|^\| tileinfer|^\| torch" | head -12
  cp "$OUT/floor.json" "$OUT/$m/floor.json" 2>/dev/null
  echo "$m showcase at ${SECONDS}s"
done
cp .gpu/call_t.sh "$OUT/"
cd "$OUT" && tar czf ../call_t.tgz . && rm -rf ./* && mv ../call_t.tgz .
