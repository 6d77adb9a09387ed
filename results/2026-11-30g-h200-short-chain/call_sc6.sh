#!/usr/bin/env bash
# Call SC6 (docs/PERFORMANCE.md "Call SC6"), ON the GPU machine from the repo root, a fresh start.
# Here first: `bash tests/gpu/prepare.sh` on main (v33) -> .gpu/bin.tar.xz; carry it and this
# script as .gpu/call_sc6.sh. ~4 min.
# Nsight Compute's stall reasons on one 16-step window launch at context 32 (bench: one launch
# fills positions 0-15, the third worker launch is the second window), 1B then SmolLM2 shape;
# per-instruction samples come back as CSV for call_sc6/ncu_by_phase.py.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/bin.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
echo "models at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  printf "context 32 3\nquit\n" | timeout 150 ncu --clock-control none --kernel-name regex:WorkerKernel \
    --launch-skip 2 --launch-count 1 --section WarpStateStats --section SourceCounters \
    -f -o "$OUT/ncu_$m" .gpu/bin/bench --package=$W/$m.tpkg > "$OUT/ncu_$m.log" 2>&1
  echo "ncu $m: rc=$? at ${SECONDS}s: $(tail -2 "$OUT/ncu_$m.log" | tr '\n' ' ' | cut -c1-300)"
  ncu -i "$OUT/ncu_$m.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_${m}_sass.csv" 2>&1
  ncu -i "$OUT/ncu_$m.ncu-rep" --page details --csv > "$OUT/ncu_${m}_details.csv" 2>&1
  xz -f "$OUT/ncu_${m}_sass.csv"; rm -f "$OUT/ncu_$m.ncu-rep"
done
echo "done at ${SECONDS}s"
cp .gpu/call_sc6.sh "$OUT/"
cd "$OUT" && tar czf ../call_sc6.tgz . && rm -rf ./* && mv ../call_sc6.tgz .
