"""ATTENTION emulator: OLD (main) vs NEW (a branch) bitwise, and NEW against a float64 reference.

Usage: B=<build dir of setup.sh> [NEW_BIN=<a mutant>] [STEP=k] [BITWISE=0] python3 compare_at.py [max_cases]
(STEP: every k-th case. BITWISE=0: a NEW that sums in another order than OLD; the bitwise
comparison is then counted, not required, and the float64 checks decide.)
Each case runs the C ATTENTION tasks of one K/V head (rt_at.cc) in both builds and compares:
  - bitwise: every chunk's state (o, m, l per query head) and the K/V row written at pos;
  - float64 (NEW): the K row at pos = BF16(RoPE(k)) within 1 BF16 ULP, the V row = BF16(v)
    exactly; per chunk and query head, m = the max score, l = sum e^(s - m), o = sum e^(s - m) V
    over the chunk's positions (scores from the RoPE'd query and the cache as the op read it),
    errors relative to max(l) and max |o|; empty chunks: m = -inf, l = 0, o = 0;
  - the checker's reports (races, bounds, alignment, buffer rules of rt_at.cc): none allowed.
The first case also checks that the reference check fails on a NaN and on a 0.1% change.
Shapes: head_dim 8-128, groups 1-8; contexts 1-1100 around the batch and chunk edges; chunks 1-44;
min_chunk 1-128; the chunk bounds from py/planner/validate.py, not from the kernel's formula. Exit status 1 when any case fails.
"""
import os, sys
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "py"))
from emu_common import bf16_round, bf16_to_f64, bits_equal, f_to_bits, reports, rope, run_bin, ulp_dist
from planner.validate import attention_chunk  # the plan's chunk bounds, not the kernel's copy

B = os.environ["B"]
REQUIRE_BITWISE = os.environ.get("BITWISE", "1") != "0"
MERGE = os.environ.get("AT_MERGE") == "1"  # NEW merges in the last chunk's task (v30, MergeOnce); OLD does not
_libm = None


def expf(x):
    """C's expf (the host build's), element by element: the emulated merge's e_c bit for bit."""
    global _libm
    if _libm is None:
        import ctypes
        _libm = ctypes.CDLL("libm.so.6"); _libm.expf.restype = ctypes.c_float; _libm.expf.argtypes = [ctypes.c_float]
    return np.array([_libm.expf(float(v)) for v in np.atleast_1d(x)], np.float32)


def merge_parts(pairs, chunks):
    """cuda/worker.h MergeParts (kWorkerThreads 512)."""
    parts = min(max(512 // pairs, 1), 8)
    return parts if parts < chunks else max(chunks, 1)


def merge_f32(recs, HD, group):
    """MergeOnce's merge (v30) of one head's non-empty chunk records (nc, HD + 2), in its order
    with float32 roundings (the host build contracts no FMA): m* = max m_c, e_c = expf(m_c - m*),
    l = sum l_c e_c in chunk order; per element, runs of ceil(nc / parts) chunks each summed in
    order, then the runs in order; o / l."""
    f = np.float32
    nc = len(recs)
    mx = f(np.max(recs[:, HD])); e = expf(recs[:, HD] - mx)
    l = f(0)
    for c in range(nc): l = f(l + f(recs[c, HD + 1] * e[c]))
    parts = merge_parts(group * HD // 2, nc); run = -(-nc // parts)
    o = np.zeros(HD, np.float32)
    for part in range(parts):
        r = np.zeros(HD, np.float32)
        for c in range(part * run, min(nc, (part + 1) * run)):
            r = (r + (recs[c, :HD] * e[c]).astype(np.float32)).astype(np.float32)
        o = (o + r).astype(np.float32)
    return (o / l).astype(np.float32)


TOL = 2e-5  # relative to the chunk's max l / max |o| (FP32 sums of up to ~1000 terms)


def reference(HD, NH, NKV, pos, C, minc, kv, out, kc, vc, qkv, inv_freq, merged=False):
    """(errors dict, failure strings) of NEW's outputs against float64. merged: the last chunk's
    records hold the merged heads (o, 0, 1), checked against attention over all positions 0..pos."""
    group, Q, KV, stride = NH // NKV, NH * HD, NKV * HD, HD + 2
    fails, err = [], {"k_ulp": 0, "l": 0.0, "o": 0.0, "m": 0.0}
    ang = (np.float32(pos) * inv_freq.astype(np.float32)).astype(np.float64)  # the op's FP32 angle
    k = qkv[Q + kv * HD: Q + (kv + 1) * HD]; v = qkv[Q + KV + kv * HD: Q + KV + (kv + 1) * HD]
    k_ref = f_to_bits(bf16_round(rope(k.astype(np.float64), ang)))  # the op rounds its FP32 RoPE: 1 ULP
    ulp = int(np.max(ulp_dist(kc[pos, kv * HD:(kv + 1) * HD], k_ref)))
    err["k_ulp"] = ulp
    if ulp > 1: fails.append(f"K row at pos: {ulp} BF16 ULPs from float64")
    if not np.array_equal(vc[pos, kv * HD:(kv + 1) * HD], f_to_bits(bf16_round(v.astype(np.float64)))):
        fails.append("V row at pos != BF16(v)")
    K = bf16_to_f64(kc[:, kv * HD:(kv + 1) * HD]); V = bf16_to_f64(vc[:, kv * HD:(kv + 1) * HD])
    for h in range(kv * group, (kv + 1) * group):
        q = rope(qkv[h * HD:(h + 1) * HD].astype(np.float64), ang)
        s = K @ q / np.sqrt(HD)
        for c in range(C):
            b, e = attention_chunk(pos + 1, C, c, minc)
            rec = out[(c * NH + h) * stride:(c * NH + h + 1) * stride].astype(np.float64)
            if merged and c == C - 1:
                if not (np.all(np.isfinite(rec)) and rec[HD] == 0 and rec[HD + 1] == 1):
                    fails.append(f"merged head {h}: not (o, 0, 1)"); continue
                w = np.exp(s - s.max()); o = (w @ V) / w.sum()
                err["o"] = max(err["o"], np.max(np.abs(rec[:HD] - o)) / max(np.max(np.abs(o)), 1e-30))
                continue
            if b == e:
                if not (np.all(rec[:HD] == 0) and rec[HD] == -np.inf and rec[HD + 1] == 0):
                    fails.append(f"empty chunk {c} head {h}: not (0, -inf, 0)")
                continue
            if not np.all(np.isfinite(rec)):  # unwritten (NaN) or broken; max() below would skip NaN
                fails.append(f"chunk {c} head {h}: non-finite state"); continue
            m = s[b:e].max(); w = np.exp(s[b:e] - m); l = w.sum(); o = w @ V[b:e]
            err["m"] = max(err["m"], abs(rec[HD] - m) / max(1.0, abs(m)))
            err["l"] = max(err["l"], abs(rec[HD + 1] - l) / l)
            err["o"] = max(err["o"], np.max(np.abs(rec[:HD] - o)) / max(np.max(np.abs(o)), 1e-30))
    for key in ("m", "l", "o"):
        if err[key] > TOL: fails.append(f"{key} error {err[key]:.2e} > {TOL}")
    return err, fails


def cases():
    rnd = np.random.RandomState(5)
    # (head_dim, heads, kv_heads): groups 1-8, head_dim 8-128 (DPL 1-4; the > 64 template path too)
    shapes = [(64, 32, 8), (64, 9, 3), (8, 9, 3), (16, 4, 2), (128, 8, 1), (128, 16, 8), (64, 8, 1), (32, 6, 3),
              (64, 4, 4), (48, 10, 2), (80, 6, 1), (96, 14, 2), (112, 8, 2)]
    ctxs = [1, 2, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128, 129, 255, 256, 257, 511, 600, 1023, 1100]
    out = []
    for HD, NH, NKV in shapes:
        for ctx in ctxs:
            for C, minc in ((16, 32), (44, 32), (1, 1), (4, 16), (16, 128), (8, 72), (5, 3)):
                if ctx > 600 and C > 16: continue
                out.append((HD, NH, NKV, ctx - 1, C, minc, int(rnd.randint(NKV)), int(rnd.randint(1 << 20)), int(rnd.randint(2))))
    return out


def reference_catches_faults(case, outs):
    """The reference check must fail on NEW's outputs with one state value NaN (an unwritten float)
    and with one o value 0.1% off; raises AssertionError otherwise (a check that cannot fail)."""
    HD, NH, NKV, pos, C, minc, kv = case[:7]
    out, kc, vc, qkv, inv = outs
    h = kv * (NH // NKV); rec = ((C - 1) * NH + h) * (HD + 2)  # the last chunk always holds pos
    for change in (lambda o: o.__setitem__(rec, np.nan), lambda o: o.__setitem__(rec, o[rec] * 1.001 + 1e-3)):
        bad = out.copy(); change(bad)
        assert reference(HD, NH, NKV, pos, C, minc, kv, bad, kc, vc, qkv, inv)[1], "reference check cannot fail"


def main():
    todo = cases()[::int(os.environ.get("STEP", "1"))]
    # AT_NARROW=1: only the shapes v53b's narrow kernel runs (setup.sh AT_NARROW=1): head_dim <= 64 and a
    # multiple of 8, group <= 4
    if os.environ.get("AT_NARROW") == "1":
        todo = [c for c in todo if c[0] <= 64 and c[0] % 8 == 0 and c[1] // c[2] <= 4]
    if len(sys.argv) > 1: todo = todo[:int(sys.argv[1])]
    failed, worst = 0, {"k_ulp": 0, "l": 0.0, "o": 0.0, "m": 0.0}
    bitequal = 0
    for case in todo:
        HD, NH, NKV, pos, C, minc, kv, seed, poison = case
        runs = {}
        for side in ("NEW", "OLD"):
            merge = open(f"{B}/merge_{side.lower()}").read().strip()
            exe = os.environ.get("NEW_BIN", f"{B}/bin/AT_NEW") if side == "NEW" else f"{B}/bin/AT_OLD"
            r, rd = run_bin(exe, (*case, merge), f"{B}/out/at_{side}.bin")
            rep = reports(r)
            if rd is None or r.returncode != 0 or rep:
                print("FAIL", case, side, "exit", r.returncode, "; ".join(rep[:3])); failed += 1; runs = None; break
            Q, KV, stride = NH * HD, NKV * HD, HD + 2
            out = rd.take(C * NH * stride, np.float32)
            kc = rd.take((pos + 1) * KV, np.uint16).reshape(pos + 1, KV)
            vc = rd.take((pos + 1) * KV, np.uint16).reshape(pos + 1, KV)
            qkv = rd.take(Q + 2 * KV, np.float32); inv = rd.take(HD // 2, np.float32)
            runs[side] = (out, kc, vc, qkv, inv)
        if runs is None: continue
        (on, kn, vn, qn, iv), (oo, ko, vo, _, _) = runs["NEW"], runs["OLD"]
        merged, merge_fails = False, []
        if MERGE:  # the last chunk's records: NEW's merged heads against OLD's chunks merged in MergeOnce's order
            stride, group = HD + 2, NH // NKV
            nonempty = [c for c in range(C) if attention_chunk(pos + 1, C, c, minc)[0] < attention_chunk(pos + 1, C, c, minc)[1]]
            merged = len(nonempty) > 1
            if merged:
                oo = oo.copy()
                for h in range(kv * group, (kv + 1) * group):
                    recs = np.stack([oo[(c * NH + h) * stride:(c * NH + h + 1) * stride] for c in nonempty])
                    want = np.concatenate([merge_f32(recs, HD, group), np.float32([0, 1])])
                    last = ((C - 1) * NH + h) * stride
                    if not bits_equal(on[last:last + stride], want):
                        merge_fails.append(f"merged head {h} not bit-identical to MergeOnce's order (merge_f32)")
                    oo[last:last + stride] = want  # the rest is compared as without the merge
        same = bits_equal(on, oo) and np.array_equal(kn, ko) and np.array_equal(vn, vo) and not merge_fails
        bitequal += same
        if case is todo[0]: reference_catches_faults(case, runs["NEW"])
        err, fails = reference(HD, NH, NKV, pos, C, minc, kv, on, kn, vn, qn, iv, merged)
        if REQUIRE_BITWISE: fails += merge_fails  # else (tiles: other chunk sums than OLD's) float64 decides
        for key in worst: worst[key] = max(worst[key], err[key])
        if not same and REQUIRE_BITWISE: fails.append("NOT BIT-IDENTICAL to OLD")
        if fails: print("FAIL", case, "; ".join(fails)); failed += 1
    print(f"cases {len(todo)}, failed {failed}, bitwise equal NEW/OLD {bitequal}; worst vs float64: K row "
          f"{worst['k_ulp']} ULP, m {worst['m']:.2e}, l {worst['l']:.2e}, o {worst['o']:.2e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
