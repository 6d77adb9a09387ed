# EMUFFN: OpFfn, OpRmsNormGemv and OpLmHead of exp/threads-256 (bin/NEW, 256 threads) against main's
# (bin/OLD, 512 threads) and a float64 numpy reference; every run must also be clean (no race,
# bounds, alignment or ownership report). usage: B=<build dir> python3 compare_ops.py [max_cases]
# EMU512: NEW = a 512-thread branch, OLD = main (512 threads). Exact check: the whole work area
# after the last task (xn, FFN hbuf), every output float (FFN: all slots; GEMV/LM_HEAD: the whole
# out buffer incl. the NaN rows outside the tasks) and LM_HEAD's candidates must be BITWISE equal
# (uint32 views: -0.0 != +0.0, NaN payloads count); any difference is a FAIL ("NOT BIT-IDENTICAL").
# The EMU256 tolerance checks are kept and reported as before.
import numpy as np, sys, os, random, json
from multiprocessing import Pool
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from emu_common import bits_equal as beq, run_bin, reports, bf16_to_f64 as bf
B = os.environ["B"]; EPS = 1e-5
def run(v, args, tag):
    op, K, r0, nr, nt = args[:5]
    exe = os.environ.get("NEW_BIN", f"{B}/bin/NEW") if v == "NEW" else f"{B}/bin/{v}"   # EMU512: NEW_BIN = a mutant
    r, rd = run_bin(exe, args, f"{B}/out/{v}_{tag}.bin")
    if rd is None: return r, None   # EMU512: the run crashed before writing (e.g. a mutant's misaligned SSE load)
    take = rd.take
    R = r0 + nt*nr + 3
    d = dict(work=take(K + nr if op == 5 else K, np.float32), out=take(nt*K if op == 5 else R, np.float32))
    c = take(nt*2, np.float32); d["cval"] = c[0::2]; d["cid"] = c.view(np.int32)[1::2]
    d["x"] = take(K, np.float32); d["g"] = take(K, np.uint16)
    d["W"] = [take(R*K, np.uint16).reshape(R, K) for _ in range(3 if op == 5 else 1)]
    return r, d
def check(args):
    op, K, r0, nr, nt, seed, poison, xmis, special = args
    tag = "_".join(map(str, args)); msgs = []; st = {}
    rn, n = run("NEW", args, tag); ro, o = run("OLD", args, tag)
    if n is None or o is None:
        return args, st, [f"NO OUTPUT (crash) NEW rc={rn.returncode} OLD rc={ro.returncode}: " + " | ".join((rn.stdout + rn.stderr).strip().splitlines()[:3])]
    for nm, r in (("NEW", rn), ("OLD", ro)):
        s = reports(r)
        if r.returncode != 0 or s: msgs.append(f"{nm} rc={r.returncode}: " + " | ".join(s[:6]))
    x = n["x"].astype(np.float64); g = bf(n["g"])
    xn = x * g / np.sqrt((x*x).mean() + EPS)
    # the normalized input of the last task (work area [0, K)): bit-equal when both builds sum x^2
    # in the same order (vector norm with one float4 per thread in both, or the scalar norm with
    # one element per thread); then every output must be bit-equal too (same per-row order)
    xeq = bool(np.array_equal(n["work"][:K], o["work"][:K])); st["xn_bitequal"] = int(xeq)
    exact = dict(work=beq(n["work"], o["work"]), out=beq(n["out"], o["out"]),
                 cand=beq(n["cval"], o["cval"]) and bool(np.array_equal(n["cid"], o["cid"])))
    st["exact_work"] = int(exact["work"]); st["exact_out"] = int(exact["out"])
    if op == 7: st["exact_cand"] = int(exact["cand"])
    if not all(exact.values()): msgs.append("NOT BIT-IDENTICAL " + json.dumps(exact))
    def rel(a, b, scale): return float((np.abs(a.astype(np.float64) - b) / scale).max()) if len(a) else 0.0
    if op == 5:
        Wg, Wu, Wd = (bf(w) for w in n["W"])
        for k in range(nt):
            rows = slice(r0 + k*nr, r0 + (k+1)*nr)
            gg, uu = Wg[rows] @ xn, Wu[rows] @ xn; h = gg / (1 + np.exp(-gg)) * uu
            ref = h @ Wd[rows]; sc = np.abs(h) @ np.abs(Wd[rows]) + 1e-30
            on, oo = n["out"][k*K:(k+1)*K], o["out"][k*K:(k+1)*K]
            st["out_new_old"] = max(st.get("out_new_old", 0), rel(on, oo, np.abs(oo).max()))
            st["out_new_old_abssum"] = max(st.get("out_new_old_abssum", 0), rel(on, oo, sc))
            st["out_new_ref"] = max(st.get("out_new_ref", 0), rel(on, ref, sc))
            st["out_old_ref"] = max(st.get("out_old_ref", 0), rel(oo, ref, sc))
            st["out_bitequal"] = st.get("out_bitequal", 1) & int(np.array_equal(on, oo))
        hn, ho = n["work"][K:K+nr], o["work"][K:K+nr]     # hbuf of the last task
        hsc = np.abs(Wg[rows]) @ np.abs(xn) * np.abs(Wu[rows] @ xn) + np.abs(gg*uu) + 1e-30
        st["hbuf_new_old"] = rel(hn, ho, np.abs(ho).max()); st["hbuf_new_ref"] = rel(hn, h, hsc)
        st["hbuf_bitequal"] = int(np.array_equal(hn, ho))
        if xeq and not (st["out_bitequal"] and st["hbuf_bitequal"]): msgs.append("xn equal, outputs not bit-equal")
        if st["out_new_old"] > 1e-5 or st["hbuf_new_old"] > 1e-5: msgs.append("NEW-OLD tolerance mismatch " + json.dumps(st))
        if st["out_new_ref"] > 1e-5 or st["hbuf_new_ref"] > 1e-5:   # EMU512: kept apart (a float64-reference metric, not NEW vs OLD)
            msgs.append("REF-ONLY float64 tolerance exceeded " + json.dumps(st))
    else:
        W = bf(n["W"][0]); rows = slice(r0, r0 + nt*nr)
        on, oo = n["out"][rows], o["out"][rows]
        with np.errstate(all="ignore"):
            ref = W[rows] @ xn; sc = np.abs(W[rows]) @ np.abs(xn) + 1e-30
        fin = np.isfinite(oo) & np.isfinite(on)
        st["out_bitequal"] = int(np.array_equal(on, oo, equal_nan=True))
        st["out_new_old_abssum"] = rel(on[fin], oo[fin], sc[fin])
        st["out_new_ref"] = rel(on[fin], ref[fin], sc[fin]); st["out_old_ref"] = rel(oo[fin], ref[fin], sc[fin])
        st["nonfinite_same"] = int(np.array_equal(np.isfinite(on), np.isfinite(oo)) and np.array_equal(np.isfinite(on), np.isfinite(ref)))
        if (xeq and not st["out_bitequal"]) or st["out_new_old_abssum"] > 1e-6 or not st["nonfinite_same"]:
            msgs.append("NEW-OLD tolerance mismatch " + json.dumps(st))
        if st["out_new_ref"] > 1e-5: msgs.append("REF-ONLY float64 tolerance exceeded " + json.dumps(st))
        if op == 7:
            # ids identical always; values bit-identical when xn is (else each is its build's own max logit)
            same = np.array_equal(n["cid"], o["cid"]) and (not xeq or np.array_equal(n["cval"], o["cval"], equal_nan=True))
            st["cand_equal"] = int(same); exp_ok = True
            for k in range(nt):
                lg = n["out"][r0 + k*nr: r0 + (k+1)*nr]
                if not np.isfinite(lg).all(): e = (-1, None)
                else: e = (r0 + k*nr + int(np.argmax(lg)), lg.max())   # argmax: lowest index among ties
                if n["cid"][k] != e[0] or (e[1] is not None and n["cval"][k] != e[1]) or (e[1] is None and not np.isnan(n["cval"][k])): exp_ok = False
            st["cand_expected"] = int(exp_ok)
            st["ties"] = int(special == 1 and any(np.sum(n["out"][r0+k*nr:r0+(k+1)*nr] == n["cval"][k]) > 1 for k in range(nt)))
            if not same or not exp_ok: msgs.append("candidate mismatch " + json.dumps(dict(new=list(zip(n["cval"].tolist(), n["cid"].tolist())), old=list(zip(o["cval"].tolist(), o["cid"].tolist())))))
    return args, st, msgs
def cases():
    # EMU512 set. xmis bits (rt_ops.cc): 1 x misaligned (scalar norm), 2 Wg/W rows 8 bytes off,
    # 4 Wu rows 8 bytes off (WarpDot2Bf16's address fallback; 6: both). K % 8 != 0 (36, 44): the
    # k fallback. K 4096: two iterations of the 16-byte loop (and the scalar norm).
    rnd = random.Random(512); cs = []
    for H in (2048, 576, 64, 40, 36, 44, 4096):
        for nr in (1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 62):
            cs.append((5, H, 0, nr, 1, rnd.randint(0, 10**6), 1, 0, 0))
            cs.append((5, H, rnd.randint(1, 300), nr, 2, rnd.randint(0, 10**6), 1, 0, 0))
            cs.append((5, H, rnd.randint(1, 300), nr, 2, rnd.randint(0, 10**6), 0, 1, 0))
            cs.append((5, H, rnd.randint(0, 300), nr, 2, rnd.randint(0, 10**6), rnd.randint(0, 1), rnd.choice([2, 4, 6, 3]), 0))
    for op in (2, 7):
        for K in (2048, 576, 40, 36):
            for nr in list(range(1, 41)) + [47, 48, 49, 63, 64, 65, 70, 970]:
                nt = 2 if nr <= 70 else 1
                r0 = 0 if nr % 5 == 0 else rnd.randint(1, 500)
                sp = (nr % 4) if op == 7 else 0
                xm = [0, 0, 1, 2, 3][nr % 5] if nr % 3 == 0 else int(nr % 7 == 3)
                cs.append((op, K, r0, nr, nt, rnd.randint(0, 10**6), rnd.randint(0, 1), xm, sp))
    return cs
if __name__ == "__main__":
    cs = cases()
    cs = cs[::int(os.environ.get("STEP", "1"))]   # EMU512: STEP=k runs every k-th case (mutants)
    if len(sys.argv) > 1: cs = cs[:int(sys.argv[1])]
    agg = {}; nfail = 0; cnt = {}; kinds = {}
    with Pool(os.cpu_count()) as pool:
        for args, st, msgs in pool.imap_unordered(check, cs):
            cnt[args[0]] = cnt.get(args[0], 0) + 1
            for k, v in st.items():
                key = f"op{args[0]}_K{args[1] if args[0] != 5 else 'any'}_{k}"
                agg[key] = agg.get(key, 0) + v if ("equal" in k or k.startswith("exact") or k in ("ties", "nonfinite_same", "cand_expected")) else max(agg.get(key, 0), v)
            for m in msgs:
                kind = m.split(" {")[0].split(":")[0]; kinds[kind] = kinds.get(kind, 0) + 1
            if msgs: nfail += 1; print("FAIL", args, "; ".join(msgs), flush=True)
    print(f"cases {len(cs)} (per opcode {cnt}), failed {nfail}; messages by kind {json.dumps(kinds)}")
    for k in sorted(agg): print(f"  {k} {agg[k]}")
