# EMU512: mutants of the NEW pair code (WarpDot2Bf16, WarpRowsGemv's pairs) in $B/fake_new/cuda/common.cuh.
# Each is built as $B/mut/<name> (mutate.py's build) and must be caught by compare_ops.py
# (exact check, or a checker report): run with NEW_BIN=$B/mut/<name> STEP=4 (mutrun_pair.sh).
#   pair_swap      16-byte path returns (b, a)                  -> exact check
#   pair_order_b   row b's 8 products summed in reverse order   -> exact check only (values within ulps)
#   fb_swap        fallback returns (b, a)                      -> exact check, fallback cases only
#   fb_cond_a      fallback test ignores wb's address           -> alignment checker (Wu 8 bytes off)
#   rows_le        WarpRowsGemv pairs r + 16 <= row_end         -> bounds/ownership (pair-rows only)
#   rows_yx        WarpRowsGemv writes y.x for row r + 16       -> exact check (pair-rows only)
import os
from mutate import B, build
src = open(f"{B}/fake_new/cuda/common.cuh").read()
DOT8R = '''__device__ __forceinline__ float Dot8r(const uint4 v, const float* xs) {
  return Bf16Hi(v.w) * xs[7] + Bf16Lo(v.w) * xs[6] + Bf16Hi(v.z) * xs[5] + Bf16Lo(v.z) * xs[4] +
         Bf16Hi(v.y) * xs[3] + Bf16Lo(v.y) * xs[2] + Bf16Hi(v.x) * xs[1] + Bf16Lo(v.x) * xs[0];
}
// `shared`: w points'''
muts = {
  "pair_swap": [("return make_float2(WarpSum(acc_a), WarpSum(acc_b));", "return make_float2(WarpSum(acc_b), WarpSum(acc_a));")],
  "pair_order_b": [("// `shared`: w points", DOT8R), ("if (i < n) acc_b += Dot8(vb[u], x + i * 8);", "if (i < n) acc_b += Dot8r(vb[u], x + i * 8);")],
  "fb_swap": [("return make_float2(WarpDotBf16(wa, x, k), WarpDotBf16(wb, x, k));", "return make_float2(WarpDotBf16(wb, x, k), WarpDotBf16(wa, x, k));")],
  "fb_cond_a": [("((reinterpret_cast<uintptr_t>(wa) | reinterpret_cast<uintptr_t>(wb)) & 15)", "(reinterpret_cast<uintptr_t>(wa) & 15)")],
  "rows_le": [("if (kPairs && !shared && r + kWarps < t.row_end) {", "if (kPairs && !shared && r + kWarps <= t.row_end) {")],
  "rows_yx": [("out(r + kWarps, y.y);", "out(r + kWarps, y.x);")],
}
for name, subs in muts.items():
    s = src
    if any(s.count(a) != 1 for a, _ in subs): print("skip", name, "(not in this version)"); continue
    for a, b in subs: s = s.replace(a, b)
    build(name, "common.cuh", s)
