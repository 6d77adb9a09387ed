# EMU512: OpAttnOut (merge + Wo GEMV) of a 512-thread branch (AO_NEW) against main's (AO_OLD,
# also 512 threads) and a float64 reference, on random chunk states (empty chunks before
# `first`: m = -inf, l = 0, o = 0). Build dir: $B (setup_ao.sh).
# Exact check (EMU512): attn (the merged Q floats) and out (the task rows) must be BITWISE equal
# (uint32 views, so -0.0 != +0.0 and NaN payloads count); every difference is a FAIL. The old
# tolerance checks (NEW-OLD 1e-6/1e-5, NEW-ref 1e-5) are kept and reported too.
# usage: B=... python3 compare_ao.py [orig] [max_cases]   (orig: EMU256's original 736-case set)
import numpy as np, sys, os, random, json, re
from multiprocessing import Pool
from emu_common import bits_equal, run_bin, reports, bf16_to_f64
B = os.environ["B"]; BIN = f"{B}/bin"
def run(v, HD, NH, C, minc, pos, seed, poison, H, r0, r1, tag):
    r, rd = run_bin(f"{BIN}/{v}", [HD, NH, C, minc, pos, seed, poison, H, r0, r1], f"{B}/out/{v}_{tag}.bin")
    Q = NH*HD; take = rd.take
    attn = take(Q, np.float32); out = take(H, np.float32); part = take(C*NH*(HD+2), np.float32).reshape(C, NH, HD+2)
    resid = take(H, np.float32); wo = take(H*Q, np.uint16).reshape(H, Q)
    return r, attn, out, part, resid, wo
def barriers(r):
    m = re.search(r"^barriers (\d+)", r.stdout, re.M); return int(m.group(1)) if m else -1
def check(args):
    HD, NH, C, minc, pos, seed, poison, H, r0, r1 = args
    tag = "_".join(map(str, args)); msgs = []
    rn, an, on, part, resid, wo = run("AO_NEW", *args, tag)
    ro, ao, oo, _, _, _ = run("AO_OLD", *args, tag)
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
    rows = slice(r0, r1)
    W = bf16_to_f64(wo)
    gref = resid[rows] + W[rows] @ an.astype(np.float64)
    st["out_new_old"] = float(np.abs(on[rows].astype(np.float64)-oo[rows]).max()/max(1.0, np.abs(oo[rows]).max())) if r1 > r0 else 0.0
    st["out_new_ref"] = float((np.abs(on[rows]-gref)/(np.abs(W[rows])@np.abs(an)+np.abs(resid[rows]))).max()) if r1 > r0 else 0.0
    st["out_bitequal"] = int(bits_equal(on[rows], oo[rows]))
    st["out_all_bitequal"] = int(bits_equal(on, oo))          # incl. the NaN rows outside [r0, r1)
    if st["attn_new_old"] > 1e-6 or st["attn_new_ref"] > 1e-5: msgs.append("attn mismatch (tolerance) " + json.dumps(st))
    if st["out_new_old"] > 1e-5 or st["out_new_ref"] > 1e-5: msgs.append("out mismatch (tolerance) " + json.dumps(st))
    if not (st["attn_bitequal"] and st["out_bitequal"] and st["out_all_bitequal"]): msgs.append("NOT BIT-IDENTICAL " + json.dumps(st))
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
                cs.append((HD, NH, rnd.randint(1, 16), minc, ctx-1, rnd.randint(0, 10**6), rnd.randint(0, 1), H, a, b))
        for C in range(1, 17):                 # every chunk count: one case with one non-empty chunk, one random
            H, a, b = rows()
            cs.append((HD, NH, C, 128, rnd.randint(1, 128)-1, rnd.randint(0, 10**6), rnd.randint(0, 1), H, a, b))
            H, a, b = rows(); minc = rnd.choice([1, 16, 128])
            cs.append((HD, NH, C, minc, rnd.randint(1, 1000)-1, rnd.randint(0, 10**6), rnd.randint(0, 1), H, a, b))
    return cs
def cases_orig():  # EMU256's original set (736 cases: HD x NH in {(64,32),(64,9),(16,4),(2,3)}, C 1..16, min_chunk 16 / 1)
    rnd = random.Random(3); cs = []
    for NH, HD in [(32, 64), (9, 64), (4, 16), (3, 2)]:
        for C in range(1, 17):
            for n in range(1, C+1):   # n non-empty chunks: min_chunk 16, ctx in ((n-1)*16, n*16]
                ctx = (n-1)*16 + rnd.randint(1, 16)
                H = 80; a = rnd.randint(0, 10); b = a + rnd.choice([0, 1, 7, 9, 17, 33, 40, 64, 70])
                cs.append((HD, NH, C, 16, ctx-1, rnd.randint(0, 10**6), rnd.randint(0, 1), H, a, min(b, H)))
            for ctx in (1, C, rnd.randint(C, 1000)):   # min_chunk 1
                cs.append((HD, NH, C, 1, ctx-1, rnd.randint(0, 10**6), 1, 80, 0, 80))
    return cs
if __name__ == "__main__":
    os.makedirs(f"{B}/out", exist_ok=True)
    args = sys.argv[1:]
    cs = cases_orig() if args[:1] == ["orig"] else cases()
    if args[:1] == ["orig"]: args = args[1:]
    if args: cs = cs[:int(args[0])]
    agg = {}; nfail = 0; hist = {}; bar = {}
    SUM = ("attn_bitequal", "out_bitequal", "out_all_bitequal", "chunks", "nonempty", "one_chunk")
    with Pool(2) as pool:
        for args, st, msgs in pool.imap_unordered(check, cs):
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
