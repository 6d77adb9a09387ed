#!/usr/bin/env bash
# Call WR (docs/PERFORMANCE.md v62), ON the GPU machine from the repo root: floor --mode=pipeline's
# references (runs 1-4, 50, 51) and the loader feeding a ring a warp (runs 55-68), two passes;
# runs 50, 55, 57, 64 again with the attention spin doubled (the marginal cost of a stop); then
# memcheck and synccheck of runs 55, 57, 60, 64, 66 and racecheck of 57 on a small shape.
# (Call WR ran it with runs 1-63; call WR2 with runs 1-68; call WR3 with RUNS=50,51,64,65,69-73
# ATTN_RUNS=64,69 SAN_RUNS='69 72 73' RACE_RUN=69.)
# Here first: .gpu/wr/floor = floor of the commit (bazel build -c opt //tests/bench:floor).
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
F=.gpu/wr/floor
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
RUNS=${RUNS:-1,2,3,4,50,51,55,56,57,58,59,60,61,62,63,64,65,66,67,68}
for pass in 1 2; do
  timeout 200 "$F" --mode=pipeline --pipeline_runs=$RUNS > "$OUT/pipeline_$pass.json" 2>> "$OUT/err.txt"
  echo "pipeline pass $pass rc=$? at ${SECONDS}s"
done
timeout 100 "$F" --mode=pipeline --pipeline_runs=${ATTN_RUNS:-50,55,57,64} --pipeline_attention_ns=10000 \
  > "$OUT/pipeline_attn10.json" 2>> "$OUT/err.txt"
echo "attention 10 us rc=$? at ${SECONDS}s"
cat "$OUT/err.txt"
SMALL="--mode=pipeline --reps=1 --pipeline_tokens=1 --pipeline_layers=2 --pipeline_wave_bytes=8192,4096,32768"
for tool in memcheck synccheck; do
  for run in ${SAN_RUNS:-55 57 60 64 66}; do
    timeout 100 compute-sanitizer --tool "$tool" --error-exitcode 9 "$F" $SMALL --pipeline_runs=$run \
      > "$OUT/${tool}_$run.txt" 2>&1
    echo "$tool run $run rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY' "$OUT/${tool}_$run.txt" | tail -1)"
  done
done
R=${RACE_RUN:-57}
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 "$F" $SMALL --pipeline_runs=$R \
  > "$OUT/racecheck_$R.txt" 2>&1
echo "racecheck run $R rc=$? at ${SECONDS}s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck_$R.txt" | tail -1)"
python3 - "$OUT"/pipeline_1.json "$OUT"/pipeline_2.json "$OUT"/pipeline_attn10.json <<'PY'
import json, sys
passes = []
for p in sys.argv[1:]:
    try:
        passes.append({r["run"]: r for r in json.load(open(p))["runs"]})
    except (OSError, ValueError, KeyError) as e:
        print(f"{p}: {e}")
        passes.append({})
print("run  pass1  pass2  attn10  (us a layer) | block 0 waits, pass 1: loader idle, cap, full, barrier, phase, chain rt")
for run in sorted(set().union(*passes)):
    cells = [f"{d[run]['us_per_layer']:6.2f}" if run in d else "     -" for d in passes]
    r = next(d[run] for d in passes if run in d)
    w = r["block0_waits_us_per_layer"]
    kind = "warp_rings" if r.get("warp_rings") else ("warp_pipeline" if r.get("warp_pipeline") else r["weights"])
    print(f"{run:3d} {' '.join(cells)}  {kind} {r['chunk']}x{r['stages']} cap {r['max_in_flight']} "
          f"spins {r['spin_ns']} chain {r['chain_phases']} | {w['loader_empty']:.2f} {w['loader_cap']:.2f} "
          f"{w['compute_full']:.2f} {w['compute_barrier']:.2f} {w['compute_phase']:.2f} {w['chain_load_us']:.3f}")
PY
(cd "$OUT" && tar czf sanitize.tar.gz ./*check_*.txt && rm -f ./*check_*.txt)
cp "$0" "$OUT/"
