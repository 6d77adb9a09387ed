# EMUFFN: OpFfn, OpRmsNormGemv and OpLmHead of exp/threads-256 (bin/NEW, 256 threads) against main's
# (bin/OLD, 512 threads) and a float64 numpy reference; every run must also be clean (no race,
# bounds, alignment or ownership report). usage: B=<build dir> python3 compare_ops.py [max_cases]
# EMU512: NEW = a 512-thread branch, OLD = main (512 threads). Exact check: the whole work area
# after the last task (xn, FFN hbuf), every output float (FFN: all slots; GEMV/LM_HEAD: the whole
# out buffer incl. the NaN rows outside the tasks) and LM_HEAD's candidates must be BITWISE equal
# (uint32 views: -0.0 != +0.0, NaN payloads count); any difference is a FAIL ("NOT BIT-IDENTICAL").
# The EMU256 tolerance checks are kept and reported as before.
# Package format 2 (v48): GEMV / LM_HEAD read x as the FIXED64 residual (reference x = q * 2^-32); the FFN
# adds fix(part) into the FIXED64 residual x0 from a nonzero baseline (exact: x0's int64 values and
# residual_invalid; reference: baseline + sum over tasks of round(part_k * 2^32), part_k = h @ Wd[rows],
# and the last task's part, left in the work area, against h @ Wd[rows]). 748 cases as before + 20.
import numpy as np, sys, os, random, json
from multiprocessing import Pool
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from emu_common import bits_equal as beq, run_bin, reports, bf16_to_f64 as bf, TWO32, fix64, format_spec
B = os.environ["B"]; EPS = 1e-5
NONFINITE = format_spec.CANDIDATE_NONFINITE
def run(v, args, tag):
    op, K, r0, nr, nt = args[:5]
    exe = os.environ.get("NEW_BIN", f"{B}/bin/NEW") if v == "NEW" else f"{B}/bin/{v}"   # EMU512: NEW_BIN = a mutant
    r, rd = run_bin(exe, args, f"{B}/out/{v}_{tag}.bin")
    if rd is None: return r, None   # EMU512: the run crashed before writing (e.g. a mutant's misaligned SSE load)
    take = rd.take
    R = r0 + nt*nr + 3
    # format 2 (rt_ops.cc's output file): FFN out = the FIXED64 residual x0 (H int64), x = F32 x1;
    # GEMV / LM_HEAD out = R f32, x = the FIXED64 residual (K int64)
    d = dict(work=take(K + nr if op == 5 else K, np.float32), out=take(K, np.int64) if op == 5 else take(R, np.float32))
    c = take(nt*2, np.float32); d["cval"] = c[0::2]; d["cid"] = c.view(np.int32)[1::2]
    d["x"] = take(K, np.float32) if op == 5 else take(K, np.int64); d["g"] = take(K, np.uint16)
    d["W"] = [take(R*K, np.uint16).reshape(R, K) for _ in range(3 if op == 5 else 1)]
    d["base"] = take(K, np.int64) if op == 5 else None
    d["invalid"] = int(take(1, np.uint64)[0])
    return r, d
def triple_kind(args):
    """op 2 cases whose tasks give some warp an odd number (>= 3) of rows (WarpRowsGemv<true>'s
    WarpDotRowsBf16<3>): 'vec' (16-byte loads), 'fb_misaligned' (W 8 bytes off: scalar fallback),
    'fb_k' (K % 8 != 0: scalar fallback); None otherwise."""
    op, K, r0, nr, nt, seed, poison, xmis, special = args
    if op != 2: return None
    rows = [(nr - w + 15) // 16 for w in range(min(nr, 16))]
    if not any(c >= 3 and c % 2 == 1 for c in rows): return None
    return "fb_k" if K % 8 else "fb_misaligned" if xmis & 2 else "vec"
def check(args):
    op, K, r0, nr, nt, seed, poison, xmis, special = args
    tag = "_".join(map(str, args)); msgs = []; st = {}
    rn, n = run("NEW", args, tag); ro, o = run("OLD", args, tag)
    if n is None or o is None:
        return args, st, [f"NO OUTPUT (crash) NEW rc={rn.returncode} OLD rc={ro.returncode}: " + " | ".join((rn.stdout + rn.stderr).strip().splitlines()[:3])]
    for nm, r in (("NEW", rn), ("OLD", ro)):
        s = reports(r)
        if r.returncode != 0 or s: msgs.append(f"{nm} rc={r.returncode}: " + " | ".join(s[:6]))
    # x as float64: FFN x1 (F32); GEMV / LM_HEAD the FIXED64 residual, real(q) = q * 2^-32
    x = n["x"].astype(np.float64) if op == 5 else n["x"].astype(np.float64) / TWO32
    g = bf(n["g"])
    xn = x * g / np.sqrt((x*x).mean() + EPS)
    # work area [0, K): GEMV / LM_HEAD the normalized input of the last task (bit-equal when both builds
    # sum x^2 in the same order; then every output must be bit-equal too); FFN the last task's part
    xeq = bool(np.array_equal(n["work"][:K], o["work"][:K])); st["xn_bitequal"] = int(xeq)
    exact = dict(work=beq(n["work"], o["work"]),
                 out=(bool(np.array_equal(n["out"], o["out"])) if op == 5 else beq(n["out"], o["out"])),
                 cand=beq(n["cval"], o["cval"]) and bool(np.array_equal(n["cid"], o["cid"])),
                 invalid=n["invalid"] == o["invalid"])
    st["exact_work"] = int(exact["work"]); st["exact_out"] = int(exact["out"]); st["exact_invalid"] = int(exact["invalid"])
    if op == 7: st["exact_cand"] = int(exact["cand"])
    if not all(exact.values()): msgs.append("NOT BIT-IDENTICAL " + json.dumps(exact))
    def rel(a, b, scale): return float((np.abs(a.astype(np.float64) - b) / scale).max()) if len(a) else 0.0
    if op == 5:
        Wg, Wu, Wd = (bf(w) for w in n["W"])
        # x0 = baseline + sum over tasks of fix(part_k); fix(v) = round(v * 2^32), 0 (and counted in
        # residual_invalid) outside [-2^21, 2^21] or non-finite
        tot = np.zeros(K); totsc = np.zeros(K); want_invalid = 0
        for k in range(nt):
            rows = slice(r0 + k*nr, r0 + (k+1)*nr)
            gg, uu = Wg[rows] @ xn, Wu[rows] @ xn; h = gg / (1 + np.exp(-gg)) * uu
            with np.errstate(all="ignore"):
                ref = h @ Wd[rows]; sc = np.abs(h) @ np.abs(Wd[rows]) + 1e-30
            q, ok = fix64(ref); want_invalid += int((~ok).sum())
            tot += q / TWO32; totsc += np.where(ok, sc, 0)
        fin = np.isfinite(ref)   # the last task's part (work area [0, K)) against its reference
        pn, po = n["work"][:K], o["work"][:K]
        st["part_new_old"] = rel(pn[fin], po[fin].astype(np.float64), np.abs(po[fin]).max() + 1e-30)
        st["part_new_ref"] = rel(pn[fin], ref[fin], sc[fin]); st["part_old_ref"] = rel(po[fin], ref[fin], sc[fin])
        st["part_bitequal"] = int(np.array_equal(pn.view(np.uint32), po.view(np.uint32)))
        dn = (n["out"] - n["base"]).astype(np.float64) / TWO32; do = (o["out"] - o["base"]).astype(np.float64) / TWO32
        # against the reference: each task's fix() may round its part one unit (2^-32) away from the
        # reference's rounding, so nt units are allowed before the relative error counts
        def relq(a): return float((np.maximum(np.abs(a - tot) - nt * 2.0**-32, 0) / (totsc + 1e-30)).max())
        st["out_new_old"] = rel(dn, do, totsc + 1e-30)
        st["out_new_ref"] = relq(dn); st["out_old_ref"] = relq(do)
        st["out_bitequal"] = int(np.array_equal(n["out"], o["out"]))
        st["base_same"] = int(np.array_equal(n["base"], o["base"]) and bool((n["base"] != 0).all()))
        st["invalid_expected"] = int(n["invalid"] == want_invalid and o["invalid"] == want_invalid)
        hn, ho = n["work"][K:K+nr], o["work"][K:K+nr]     # hbuf of the last task
        hsc = np.abs(Wg[rows]) @ np.abs(xn) * np.abs(Wu[rows] @ xn) + np.abs(gg*uu) + 1e-30
        st["hbuf_new_old"] = rel(hn, ho, np.abs(ho).max()); st["hbuf_new_ref"] = rel(hn, h, hsc)
        st["hbuf_bitequal"] = int(np.array_equal(hn, ho))
        if not st["base_same"]: msgs.append("baseline differs or has a zero")
        if not st["invalid_expected"]: msgs.append(f"residual_invalid NEW {n['invalid']} OLD {o['invalid']}, want {want_invalid}")
        if st["out_new_old"] > 1e-5 or st["hbuf_new_old"] > 1e-5 or st["part_new_old"] > 1e-5: msgs.append("NEW-OLD tolerance mismatch " + json.dumps(st))
        if st["out_new_ref"] > 1e-5 or st["hbuf_new_ref"] > 1e-5 or st["part_new_ref"] > 1e-5:   # EMU512: kept apart (a float64-reference metric, not NEW vs OLD)
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
        want_inv = 1 if (op == 7 and special == 4) else 0   # rt_ops.cc's start value; GEMV / LM_HEAD leave it
        st["invalid_expected"] = int(n["invalid"] == want_inv and o["invalid"] == want_inv)
        if not st["invalid_expected"]: msgs.append(f"residual_invalid NEW {n['invalid']} OLD {o['invalid']}, want {want_inv}")
        if (xeq and not st["out_bitequal"]) or st["out_new_old_abssum"] > 1e-6 or not st["nonfinite_same"]:
            msgs.append("NEW-OLD tolerance mismatch " + json.dumps(st))
        if st["out_new_ref"] > 1e-5: msgs.append("REF-ONLY float64 tolerance exceeded " + json.dumps(st))
        if op == 7:
            # ids identical always; values bit-identical when xn is (else each is its build's own max logit)
            same = np.array_equal(n["cid"], o["cid"]) and (not xeq or np.array_equal(n["cval"], o["cval"], equal_nan=True))
            st["cand_equal"] = int(same); exp_ok = True
            for k in range(nt):
                lg = n["out"][r0 + k*nr: r0 + (k+1)*nr]
                # a non-finite logit, or residual_invalid != 0 (special 4): (NaN, kCandidateNonFinite)
                if special == 4 or not np.isfinite(lg).all(): e = (NONFINITE, None)
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
    # format 2 extras (20, after the 748 above, which are unchanged): RMSNORM_GEMV with warps of 5 or
    # more rows and W rows 8 bytes off (WarpDotRowsBf16<3>'s scalar fallback; the 748 have misaligned
    # W only where warps hold 3 or 4 rows); the FFN with one Wd value +inf (Fix counts the out-of-range
    # part in residual_invalid); LM_HEAD with residual_invalid already 1 (kCandidateNonFinite everywhere)
    rnd = random.Random(48)
    for K in (2048, 576, 40):
        for nr, nt, xm in ((65, 2, 2), (81, 2, 3), (970, 1, 2)):
            cs.append((2, K, rnd.randint(1, 500), nr, nt, rnd.randint(0, 10**6), rnd.randint(0, 1), xm, 0))
    for H in (2048, 576, 64, 40, 36, 44, 4096):
        cs.append((5, H, rnd.randint(0, 300), rnd.choice([9, 17, 33]), 2, rnd.randint(0, 10**6), 1, rnd.choice([0, 1, 6]), 2))
    for K in (2048, 576, 40, 36):
        cs.append((7, K, rnd.randint(0, 300), rnd.choice([7, 20, 33]), 2, rnd.randint(0, 10**6), 1, rnd.choice([0, 1, 2]), 4))
    # v51 extras (10, after the 768): the FIXED64 norm above 2,048 (RmsNormToShared's staged form:
    # K 3,072 as the 3B, 1.5 groups of 4 a thread; 3,076 with the GEMV's k % 8 fallback; x misaligned:
    # the scalar form). The FFN's (F32) staged form: the H 4,096 cases above.
    rnd = random.Random(51)
    for op in (2, 7):
        for K, nr, xm in ((3072, 3, 0), (3072, 16, 0), (3072, 9, 1), (3072, 40, 2), (3076, 7, 0)):
            cs.append((op, K, rnd.randint(0, 300), nr, 2, rnd.randint(0, 10**6), 1, xm, 0))
    return cs
if __name__ == "__main__":
    cs = cases()
    cs = cs[::int(os.environ.get("STEP", "1"))]   # EMU512: STEP=k runs every k-th case (mutants)
    if len(sys.argv) > 1: cs = cs[:int(sys.argv[1])]
    agg = {}; nfail = 0; cnt = {}; kinds = {}; trip = {}; nexact = nclean = nref_only = 0
    with Pool(os.cpu_count()) as pool:
        for args, st, msgs in pool.imap_unordered(check, cs):
            cnt[args[0]] = cnt.get(args[0], 0) + 1
            for k, v in st.items():
                key = f"op{args[0]}_K{args[1] if args[0] != 5 else 'any'}_{k}"
                agg[key] = agg.get(key, 0) + v if ("equal" in k or k.startswith("exact") or k in ("ties", "nonfinite_same", "cand_expected", "invalid_expected", "base_same")) else max(agg.get(key, 0), v)
            for m in msgs:
                kind = m.split(" {")[0].split(":")[0]; kinds[kind] = kinds.get(kind, 0) + 1
            nexact += not any(m.startswith(("NOT BIT-IDENTICAL", "NO OUTPUT")) for m in msgs)
            nclean += not any(m.startswith(("NEW rc=", "OLD rc=", "NO OUTPUT")) for m in msgs)
            nref_only += bool(msgs) and all(m.startswith("REF-ONLY") for m in msgs)
            tk = triple_kind(args)
            if tk: t = trip.setdefault(tk, [0, 0]); t[0] += 1; t[1] += bool(msgs)
            if msgs: nfail += 1; print("FAIL", args, "; ".join(msgs), flush=True)
    print(f"cases {len(cs)} (per opcode {cnt}), failed {nfail}; messages by kind {json.dumps(kinds)}")
    print(f"bitwise NEW = OLD (work area, out, candidates, residual_invalid) {nexact}/{len(cs)}; clean runs (rc 0, nothing reported, NEW and OLD) {nclean}/{len(cs)}; failed only on the float64 reference (REF-ONLY) {nref_only}")
    print("RMSNORM_GEMV cases with a warp of an odd number >= 3 of rows (WarpDotRowsBf16<3>), [cases, failed]: " + json.dumps(trip, sort_keys=True))
    for k in sorted(agg): print(f"  {k} {agg[k]}")
