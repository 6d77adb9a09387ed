# Format 2 / v49 mutants of NEW (built from $B/fake_new, as mutate.py's build does: $B/mutsrc/NAME ahead of
# fake_new, binary $B/mut/NAME); each must be caught by compare_ops.py (run: NEW_BIN=$B/mut/NAME STEP=k;
# mutrun_f2.sh). Nothing here changes a tracked file.
#   triple_y12      WarpRowsGemv's triple stores y[2] for row r + kWarps and y[1] for r + 2 kWarps
#   triple_dot8     WarpDotRowsBf16<3>'s 16-byte path drops the second row's first Dot8 term (u = 0)
#   triple_fb_rot   WarpDotRowsBf16<3>'s scalar fallback gives row j + 1's sum to row j (rotated)
#   ffn_add_plus1   the FFN adds fix(part) + 1 (one unit, 2^-32, per element a task)
#   ffn_skip_last   the FFN's adds stop one element short (x0[H - 1] never added)
#   lm_no_invalid   LM_HEAD ignores residual_invalid
import os, sys
from mutate import B, build
def src(f): return open(f"{B}/fake_new/cuda/{f}").read()
muts = {
  "triple_y12": ("common.cuh", [("    out(r + kWarps, y[1]);\n    out(r + 2 * kWarps, y[2]);", "    out(r + kWarps, y[2]);\n    out(r + 2 * kWarps, y[1]);")]),
  "triple_dot8": ("common.cuh", [("if (i < n) acc[j] += Dot8(v[j][u], x + i * 8);", "if (i < n && !(kN == 3 && j == 1 && u == 0)) acc[j] += Dot8(v[j][u], x + i * 8);")]),
  # the wide instantiation's fallback (setup.sh builds that one unless EMU_NARROW=1)
  "triple_fb_rot": ("common.cuh", [("        y[j] = WarpDotBf16<true>(w[j], x, k);", "        y[j] = WarpDotBf16<true>(w[kN == 3 ? (j + 1) % 3 : j], x, k);")]),
  "ffn_add_plus1": ("op_ffn.cuh", [("RedAddU64(x0 + i, Fix(part[i], c.p.residual_invalid));", "RedAddU64(x0 + i, Fix(part[i], c.p.residual_invalid) + 1);")]),
  "ffn_skip_last": ("op_ffn.cuh", [("for (int i = threadIdx.x; i < H; i += kThreads) RedAddU64(", "for (int i = threadIdx.x; i < H - 1; i += kThreads) RedAddU64(")]),
  "lm_no_invalid": ("op_lm_head.cuh", [("if (!all_finite || *static_cast<volatile unsigned long long*>(c.p.residual_invalid) != 0) {", "if (!all_finite) {")]),
}
want = sys.argv[1:] or list(muts)
for name in want:
    f, subs = muts[name]; s = src(f)
    if any(s.count(a) != 1 for a, _ in subs): print("skip", name, "(not in this version)"); continue
    for a, b in subs: s = s.replace(a, b)
    build(name, f, s)
