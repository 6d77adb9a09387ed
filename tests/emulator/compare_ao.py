# EMU512: OpAttnOut (merge + Wo GEMV) of a 512-thread branch (AO_NEW) against main's (AO_OLD,
# also 512 threads) and a float64 reference, on random chunk states (empty chunks before
# `first`: m = -inf, l = 0, o = 0). Build dir: $B (setup_ao.sh).
# Exact check (EMU512): attn (the merged Q floats) and out (the task rows) must be BITWISE equal
# (uint32 views, so -0.0 != +0.0 and NaN payloads count); every difference is a FAIL. The old
# tolerance checks (NEW-OLD 1e-6/1e-5, NEW-ref 1e-5) are kept and reported too.
# Package format 2 (v48): lane 0 of a row's warp does x1 = real(resid[r]) + y, out[r] = x1 (F32),
# resid[r] = fix(x1) (FIXED64 residual, int64, real(q) = q * 2^-32, from a nonzero random baseline), and
# fix() counts out-of-range values in residual_invalid. Exact: attn, out (all H rows), resid after the
# run (int64, all H rows) and residual_invalid bitwise NEW == OLD. Reference (float64): attn_ref (the
# merge), x1 = baseline * 2^-32 + Wo[rows] @ attn_ref; resid's new value against fix(out) exactly
# (round(out * 2^32), 0 where |out| > 2^21 or not finite) and against round(x1 * 2^32) within the float
# rounding of x1 (a float32 sum; 1 unit of 2^-32 only where x1 is tiny); residual_invalid against the
# count of rows whose x1 is out of range. `special` (rt_ao.cc): 1 one +inf Wo element, 2 two rows of
# +-1e30 (Fix counts them). 558 cases as in format 1 + 12 special ones.
# usage: B=... [STEP=n] python3 compare_ao.py [orig] [max_cases]   (orig: EMU256's original 736-case set;
#   STEP: every n-th case only)
import numpy as np, sys, os, random, json, re
from multiprocessing import Pool
from emu_common import bits_equal, run_bin, reports, bf16_to_f64, TWO32, fix64
B = os.environ["B"]; BIN = f"{B}/bin"
def run(v, HD, NH, C, minc, pos, seed, poison, H, r0, r1, special, tag):
    exe = os.environ.get("NEW_BIN", f"{BIN}/{v}") if v == "AO_NEW" else f"{BIN}/{v}"   # NEW_BIN: a mutant
    r, rd = run_bin(exe, [HD, NH, C, minc, pos, seed, poison, H, r0, r1, special], f"{B}/out/{v}_{tag}.bin")
    if rd is None: return r, None
    Q = NH*HD; take = rd.take
    d = dict(attn=take(Q, np.float32), out=take(H, np.float32), part=take(C*NH*(HD+2), np.float32).reshape(C, NH, HD+2),
             resid=take(H, np.int64), base=take(H, np.int64), wo=take(H*Q, np.uint16).reshape(H, Q))
    d["invalid"] = int(take(1, np.uint64)[0])
    return r, d
def barriers(r):
    m = re.search(r"^barriers (\d+)", r.stdout, re.M); return int(m.group(1)) if m else -1
def check(args):
    HD, NH, C, minc, pos, seed, poison, H, r0, r1, special = args
    tag = "_".join(map(str, args)); msgs = []
    rn, n = run("AO_NEW", *args, tag)
    ro, o = run("AO_OLD", *args, tag)
    if n is None or o is None:
        return args, {}, [f"NO OUTPUT (crash) NEW rc={rn.returncode} OLD rc={ro.returncode}: " + " | ".join((rn.stdout + rn.stderr).strip().splitlines()[:3])]
    an, on, part, wo, ao, oo = n["attn"], n["out"], n["part"], n["wo"], o["attn"], o["out"]
    for nm, r in (("NEW", rn), ("OLD", ro)):
        s = reports(r)
        if r.returncode != 0 or s: msgs.append(f"{nm} rc={r.returncode}: " + " | ".join(s[:6]))
    ctx = pos + 1; span = max((ctx + C - 1)//C, minc); first = max(0, C - (ctx + span - 1)//span)
    p = part[first:].astype(np.float64)                      # (nc, NH, HD+2)
    mx = p[:, :, HD].max(0); e = np.exp(p[:, :, HD] - mx); l = (p[:, :, HD+1]*e).sum(0)
    ref = ((p[:, :, :HD]*e[:, :, None]).sum(0) / l[:, None]).reshape(-1)
    scale = np.abs(ref).max()
    st = dict(attn_new_old=float(np.abs(an.astype(np.float64)-ao).max()/scale),
              attn_new_ref=float(np.abs(an-ref).max()/scale), attn_bitequal=int(bits_equal(an, ao)),
              nonempty=C-first, chunks=C, one_chunk=int(C-first == 1),
              barriers_new=barriers(rn), barriers_old=barriers(ro))
    rows = slice(r0, r1); idx = np.arange(H)
    W = bf16_to_f64(wo); base = n["base"]
    sp = set(map(int, re.search(r"special_rows(.*)$", rn.stdout, re.M).group(1).split())) if special else set()
    norm = np.array([i not in sp for i in range(r0, r1)], bool)      # rows without a special value
    x0 = base[rows].astype(np.float64) / TWO32                        # real(baseline), exact
    gref = x0 + W[rows] @ ref                                         # float64 x1 (attn_ref)
    gref_an = x0 + W[rows] @ an.astype(np.float64)                    # with NEW's merged attn
    den = np.abs(W[rows]) @ np.abs(ref) + np.abs(x0)
    den_an = np.abs(W[rows]) @ np.abs(an.astype(np.float64)) + np.abs(x0)
    with np.errstate(all="ignore"):
        st["out_new_old"] = float(np.abs(on[rows].astype(np.float64)-oo[rows])[norm].max()/max(1.0, np.abs(oo[rows][norm]).max())) if norm.any() else 0.0
        st["out_new_ref"] = float((np.abs(on[rows]-gref_an)/den_an)[norm].max()) if norm.any() else 0.0
        st["out_new_ref64"] = float((np.abs(on[rows]-gref)/den)[norm].max()) if norm.any() else 0.0
    st["out_bitequal"] = int(bits_equal(on[rows], oo[rows]))
    st["out_all_bitequal"] = int(bits_equal(on, oo))          # incl. the NaN rows outside [r0, r1)
    rn_, ro_ = n["resid"], o["resid"]
    st["resid_bitequal"] = int(np.array_equal(rn_, ro_))
    st["invalid_equal"] = int(n["invalid"] == o["invalid"])
    st["invalid"] = n["invalid"]
    # resid: rows outside [r0, r1) keep the baseline; inside, resid = fix(out) exactly; and against the
    # float64 x1: round(x1 * 2^32) within x1's float rounding (the float32 sum's error, 2^32 * 1e-5 * den)
    outside = (idx < r0) | (idx >= r1)
    st["resid_outside_kept"] = int(np.array_equal(rn_[outside], base[outside]))
    fq, fok = fix64(on[rows]); nbad = int((~fok).sum())
    st["resid_fix_out_maxdiff"] = int(np.abs(rn_[rows] - fq).max()) if r1 > r0 else 0
    qref = np.rint(gref * TWO32)
    err = np.abs(rn_[rows].astype(np.float64) - qref) if r1 > r0 else np.zeros(0)
    with np.errstate(all="ignore"):
        st["resid_ref_units"] = float(err[norm].max()) if norm.any() else 0.0                  # units of 2^-32
        st["resid_ref_rel"] = float((np.maximum(err - 1, 0) / (TWO32 * den))[norm].max()) if norm.any() else 0.0
    want_invalid = int((~fix64(gref)[1]).sum()) if r1 > r0 else 0
    st["special"] = int(special != 0); st["special_rows"] = len(sp)
    if st["attn_new_old"] > 1e-6 or st["attn_new_ref"] > 1e-5: msgs.append("attn mismatch (tolerance) " + json.dumps(st))
    if st["out_new_old"] > 1e-5 or st["out_new_ref"] > 1e-5 or st["out_new_ref64"] > 1e-4: msgs.append("out mismatch (tolerance) " + json.dumps(st))
    if not (st["attn_bitequal"] and st["out_bitequal"] and st["out_all_bitequal"] and st["resid_bitequal"] and st["invalid_equal"]):
        msgs.append("NOT BIT-IDENTICAL " + json.dumps(st))
    if st["resid_fix_out_maxdiff"] > 1 or not st["resid_outside_kept"]: msgs.append("resid != fix(out) or changed outside the rows " + json.dumps(st))
    if st["resid_ref_rel"] > 1e-5: msgs.append("resid mismatch (float64 reference) " + json.dumps(st))
    if n["invalid"] != want_invalid or n["invalid"] != nbad or n["invalid"] != len(sp): msgs.append(f"residual_invalid {n['invalid']} want {want_invalid} (reference), {nbad} (out), {len(sp)} (special rows) " + json.dumps(st))
    return args, st, msgs
def cases():
    rnd = random.Random(512); cs = []
    # (NH, HD): Q = NH*HD; Q % 8 != 0 -> Wo rows take WarpDotBf16's scalar (unaligned) fallback: (3,2), (5,12), (1,2), (7,6)
    dims = [(32, 64), (8, 128), (9, 64), (4, 16), (3, 2), (5, 12), (1, 2), (7, 6), (2, 36)]
    ctxs = [1, 2, 3, 17, 64, 127, 128, 129, 255, 256, 257, 300, 513, 777, 1000]
    def rows():
        H = 80; a = rnd.randint(0, 10); b = a + rnd.choice([0, 1, 7, 9, 16, 17, 33, 40, 64, 70]); return H, a, min(b, H)
    for NH, HD in dims:
        for ctx in ctxs:                       # the named contexts, real min_chunk 128 and others
            for minc in (128, rnd.choice([1, 16, 64])):
                H, a, b = rows()
                cs.append((HD, NH, rnd.randint(1, 16), minc, ctx-1, rnd.randint(0, 10**6), rnd.randint(0, 1), H, a, b, 0))
        for C in range(1, 17):                 # every chunk count: one case with one non-empty chunk, one random
            H, a, b = rows()
            cs.append((HD, NH, C, 128, rnd.randint(1, 128)-1, rnd.randint(0, 10**6), rnd.randint(0, 1), H, a, b, 0))
            H, a, b = rows(); minc = rnd.choice([1, 16, 128])
            cs.append((HD, NH, C, minc, rnd.randint(1, 1000)-1, rnd.randint(0, 10**6), rnd.randint(0, 1), H, a, b, 0))
    # format 2: 12 cases with out-of-range x1 (special 1: one +inf Wo element; 2: two rows of +-1e30), own generator
    rs = random.Random(22)
    for i, (NH, HD) in enumerate([(32, 64), (8, 128), (9, 64), (4, 16), (3, 2), (7, 6)] * 2):
        a = rs.randint(0, 10); b = a + rs.choice([1, 9, 17, 40, 64])
        cs.append((HD, NH, rs.randint(1, 16), rs.choice([1, 16, 128]), rs.randint(1, 1000)-1, rs.randint(0, 10**6), rs.randint(0, 1), 80, a, min(b, 80), 1 + i % 2))
    return cs
def cases_orig():  # EMU256's original set (736 cases: HD x NH in {(64,32),(64,9),(16,4),(2,3)}, C 1..16, min_chunk 16 / 1)
    rnd = random.Random(3); cs = []
    for NH, HD in [(32, 64), (9, 64), (4, 16), (3, 2)]:
        for C in range(1, 17):
            for n in range(1, C+1):   # n non-empty chunks: min_chunk 16, ctx in ((n-1)*16, n*16]
                ctx = (n-1)*16 + rnd.randint(1, 16)
                H = 80; a = rnd.randint(0, 10); b = a + rnd.choice([0, 1, 7, 9, 17, 33, 40, 64, 70])
                cs.append((HD, NH, C, 16, ctx-1, rnd.randint(0, 10**6), rnd.randint(0, 1), H, a, min(b, H), 0))
            for ctx in (1, C, rnd.randint(C, 1000)):   # min_chunk 1
                cs.append((HD, NH, C, 1, ctx-1, rnd.randint(0, 10**6), 1, 80, 0, 80, 0))
    return cs
if __name__ == "__main__":
    os.makedirs(f"{B}/out", exist_ok=True)
    args = sys.argv[1:]
    cs = cases_orig() if args[:1] == ["orig"] else cases()
    if args[:1] == ["orig"]: args = args[1:]
    if args: cs = cs[:int(args[0])]
    cs = cs[::int(os.environ.get("STEP", "1"))]
    agg = {}; nfail = 0; hist = {}; bar = {}
    SUM = ("attn_bitequal", "out_bitequal", "out_all_bitequal", "chunks", "nonempty", "one_chunk", "resid_bitequal",
           "invalid_equal", "invalid", "resid_outside_kept", "special", "special_rows")
    with Pool(2) as pool:
        for args, st, msgs in pool.imap_unordered(check, cs):
            if not st: nfail += 1; print("FAIL", args, "; ".join(msgs), flush=True); continue
            for k, v in st.items():
                if k.startswith("barriers"): continue
                agg[k] = agg.get(k, 0) + v if k in SUM else max(agg.get(k, 0), v)
            hist[(args[2], st["nonempty"])] = 1
            key = ("nc==1" if st["one_chunk"] else "nc>1", st["barriers_new"] - st["barriers_old"])
            bar[key] = bar.get(key, 0) + 1
            if msgs: nfail += 1; print("FAIL", args, "; ".join(msgs), flush=True)
    print(f"cases {len(cs)}, failed {nfail}, distinct (chunks, non-empty) pairs {len(hist)}, "
          f"head dims {sorted({c[0] for c in cs})}, contexts {min(c[4] for c in cs)+1}..{max(c[4] for c in cs)+1}")
    print("barriers NEW - OLD per case (2 tasks):", json.dumps({f"{k[0]} {k[1]:+d}": v for k, v in sorted(bar.items())}))
    print("aggregate", json.dumps(agg))
