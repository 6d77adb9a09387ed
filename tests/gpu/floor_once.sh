#!/usr/bin/env bash
# ON the GPU machine: the measured floor (BIN_DIR/floor, ~20 s) written once to FLOOR_JSON, so that
# later steps and calls of the same machine start reuse it; prints its best_gbps (GB/s).
#   best=$(bash tests/gpu/floor_once.sh BIN_DIR FLOOR_JSON)
# Used by showcase.sh and sweep_attention.sh. A failed floor run leaves no file behind (it is
# written to FLOOR_JSON.part first), says so on stderr and exits 1.
set -euo pipefail
B=${1:?usage: floor_once.sh BIN_DIR FLOOR_JSON}
F=${2:?usage: floor_once.sh BIN_DIR FLOOR_JSON}
if [ ! -s "$F" ]; then
  "$B/floor" > "$F.part" || { rm -f "$F.part"; echo "floor_once: $B/floor failed" >&2; exit 1; }
  mv "$F.part" "$F"
fi
python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['best_gbps'])" "$F"
