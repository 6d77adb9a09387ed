#!/usr/bin/env bash
# Call S (eleventh session), a fresh machine start, main fb9628c (.gpu/bin.tar.xz).
# 1. The checks call Q lost (its `| head -40` closed the pipe: the tiles stage's last three
#    tiny models and the golden stage never ran): tiles + golden, full logs in $OUT.
# 2. attention_tile_min sweep with the per-step rule: bench windows at contexts
#    1024-4096, thresholds 32/48/64/96/128, both shapes, three interleaved blocks.
# 3. The 1B showcase against torch.compile + CUDA graph on this second machine start.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT/sweep"
export PYTHONPATH=py:.
W=/tmp/tileinfer_models
bash tests/gpu/device_checks.sh info probe tiles golden > "$OUT/checks.txt" 2>&1
echo "checks rc=$? at ${SECONDS}s"; grep -E "===|PASS|FAIL|rror" "$OUT/checks.txt"
python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=smollm2_shape,llama1b_shape 2>&1 | grep -v "^I" | tail -3
echo "models at ${SECONDS}s"
cmds="context 1024 7\ncontext 1536 7\ncontext 2048 7\ncontext 3072 7\ncontext 4096 7\nquit\n"
for block in 1 2 3; do
  for m in llama1b_shape smollm2_shape; do
    for thr in 32 48 64 96 128; do
      printf "$cmds" | timeout 60 .gpu/bin/bench --package="$W/$m.tpkg" --attention_tile_min=$thr \
        > "$OUT/sweep/${m}_${thr}_$block.jsonl" 2> "$OUT/sweep/${m}_${thr}_$block.err" || echo "bench $m $thr $block rc=$?"
    done
  done
  echo "block $block at ${SECONDS}s"
done
python3 - <<'PY'
import glob, json, os, statistics, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(os.environ["OUT"] + "/sweep/*.jsonl")):
    m, thr, _ = os.path.basename(f)[:-6].rsplit("_", 2)
    for line in open(f):
        r = json.loads(line)
        if "context" in r: d[(m, int(thr), r["context"])] += r["ms_per_token"]
for m in ("llama1b_shape", "smollm2_shape"):
    print(m, "median ms/token (21 windows: 3 blocks x 7)")
    print("thr  " + "  ".join("%7d" % c for c in (1024, 1536, 2048, 3072, 4096)))
    for thr in (32, 48, 64, 96, 128):
        print("%4d " % thr + "  ".join("%7.4f" % statistics.median(d[(m, thr, c)]) for c in (1024, 1536, 2048, 3072, 4096)))
PY
echo "sweep done at ${SECONDS}s"
SHOWCASE_TRACE=0 SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile" timeout $((590 - SECONDS)) \
  bash tests/gpu/showcase.sh llama1b_shape 2>&1 | grep -v "^I1" | grep -v -i "warn" | tail -16
cp "$OUT/floor.json" "$OUT/llama1b_shape/floor.json" 2>/dev/null
echo "done at ${SECONDS}s"
cp .gpu/call_s.sh "$OUT/"
cd "$OUT" && tar czf ../call_s.tgz . && rm -rf ./* && mv ../call_s.tgz .
