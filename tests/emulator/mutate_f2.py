# Format 2 mutants of NEW's ATTN_OUT (op file $B/ao_new.cuh, or $B/fake_new/cuda/common.cuh copied to
# $B/mutsrc/NAME/cuda ahead of fake_new); binary $B/mut/NAME. Each must be caught by compare_ao.py
# (NEW_BIN=$B/mut/NAME; mutrun_f2.sh). Nothing here changes a tracked file.
#   ao_fix_y     lane 0 writes resid[r] = Fix(y) (the residual left out of the new value; out still x1)
#   ao_out_y     lane 0 writes out[r] = y (resid still Fix(x1))
#   ao_skip_row  the Real/Fix of each task's first row skipped (no out, resid untouched)
#   pair_swap    WarpRowsGemv's pair gives row r + kWarps's sum to row r and the other way round
import sys
from mutate import B, build
op = open(f"{B}/ao_new.cuh").read(); common = open(f"{B}/fake_new/cuda/common.cuh").read()
muts = {
  "ao_fix_y": ("op", "resid[r] = Fix(x1, c.p.residual_invalid);", "resid[r] = Fix(y, c.p.residual_invalid);"),
  "ao_out_y": ("op", "out[r] = x1;", "out[r] = y;"),
  "ao_skip_row": ("op", "    if (lane0) {\n      const float x1 = Real(resid[r]) + y;", "    if (lane0 && r != t.row_begin) {\n      const float x1 = Real(resid[r]) + y;"),
  "pair_swap": ("common", "      out(r, y.x);\n      out(r + kWarps, y.y);", "      out(r, y.y);\n      out(r + kWarps, y.x);"),
}
for name in sys.argv[1:] or list(muts):
    where, a, b = muts[name]; s = op if where == "op" else common
    if s.count(a) != 1: print("skip", name, "(not in this version)"); continue
    if where == "op": build(name, s.replace(a, b))
    else: build(name, op, s.replace(a, b))
