# EMU_DIRECT: OpAttnOut of exp/direct-attention (512 threads) on the CPU emulator (bin/DA) against
# an independent float64 numpy reference.
#   direct path (pos + 1 <= direct_max_ctx): RoPE'd queries, K_pos = bf16(RoPE(k)), V_pos = bf16(v),
#     softmax over j <= pos of q_h . K_j / sqrt(HD) with the cache rows j < pos, o_h = sum p V_j,
#     query head h on K/V head h // (NH/NKV); x1 = resid + Wo o over each task's rows.
#   merge path (pos + 1 > direct_max_ctx): o_h = sum_c o_c e^(m_c - m*) / sum_c l_c e^(m_c - m*).
# Two tasks per block: W = rows [0, rm) (row_begin 0, writes the K/V row), R = rows [rm, H).
# usage: [B=<build dir>] python3 compare_da.py [BIN] [N]   (BIN default $B/bin/DA; N: first N cases only)
import numpy as np, sys, os, random, json
from multiprocessing import Pool
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from emu_common import run_bin, reports, bf16_to_f64 as bits_to_f, bf16_round, f_to_bits, ulp_dist, rope
E = os.environ.get("B") or os.path.join(os.environ.get("TMPDIR", "/tmp"), "emu_direct_build")   # setup.sh's build dir
BIN = sys.argv[1] if len(sys.argv) > 1 else f"{E}/bin/DA"

def run(args):
    (HD, NH, NKV, pos, dmc, max_ctx, layers, layer, H, rm, order, seed, poison, qscale, C, minc) = args
    tag = "_".join(map(str, args))
    r, rd = run_bin(BIN, args, f"{E}/out/{os.getpid()}_{tag}.bin")
    if rd is None: return r, None
    take = rd.take
    hdr = take(14, np.int32); Q = NH*HD; KV = NKV*HD
    d = dict(hdr=hdr, attnW=take(Q, np.float32), attnR=take(Q, np.float32), out=take(H, np.float32),
             qkv=take(Q + 2*KV, np.float32), rope=take(HD//2, np.float32), wo=take(H*Q, np.uint16).reshape(H, Q),
             resid=take(H, np.float32), cb=take(2*max_ctx*KV, np.uint16).reshape(2, max_ctx, KV),
             ca=take(2*max_ctx*KV, np.uint16).reshape(2, max_ctx, KV), part=take(C*NH*(HD+2), np.float32).reshape(C, NH, HD+2))
    return r, d

def check(args):
    (HD, NH, NKV, pos, dmc, max_ctx, layers, layer, H, rm, order, seed, poison, qscale, C, minc) = args
    msgs = []; st = {}
    r, d = run(args)
    lines = reports(r)
    summ = [x for x in r.stdout.splitlines() if x.startswith("barriers")]
    if r.returncode != 0 or lines: msgs.append(f"rc={r.returncode}: " + " | ".join(lines[:6]))
    if d is None: return args, st, msgs + ["no output"]
    if summ:
        w = summ[0].split(); kv = dict(zip(w[0::2], w[1::2]))
        st["smem_over_wsb"] = int(kv["smem_used_bytes"]) - int(kv["wsb_bytes"])
        if int(kv["smem_used_bytes"]) > int(kv["limit_bytes"]): msgs.append("smem over limit")
    Q = NH*HD; KV = NKV*HD; half = HD//2; group = NH // NKV; ctx = pos + 1
    direct = ctx <= dmc
    if direct:
        qkv = d["qkv"].astype(np.float64)
        q = qkv[:Q].reshape(NH, HD); k = qkv[Q:Q+KV].reshape(NKV, HD); v = qkv[Q+KV:].reshape(NKV, HD)
        inv = d["rope"].astype(np.float64)
        ang64 = pos * inv                                             # the formula, float64
        ang32 = (np.float32(pos) * d["rope"]).astype(np.float64)      # the device's FP32 product
        qr = rope(q, ang64); kr = rope(k, ang64)
        kpos = bf16_round(kr); vpos = bf16_round(v)
        kpos32 = bf16_round(rope(k, ang32))
        # K/V row written at pos
        kdev = d["ca"][0, pos].reshape(NKV, HD); vdev = d["ca"][1, pos].reshape(NKV, HD)
        dk = ulp_dist(kdev, f_to_bits(kpos)); dk32 = ulp_dist(kdev, f_to_bits(kpos32)); dv = ulp_dist(vdev, f_to_bits(vpos))
        st.update(k_elems=KV, k_exact=int((dk == 0).sum()), k_1ulp=int((dk == 1).sum()), k_gt1ulp=int((dk > 1).sum()),
                  k_exact_f32angle=int((dk32 == 0).sum()), v_elems=KV, v_exact=int((dv == 0).sum()))
        if (dk > 1).any() or (dv != 0).any(): msgs.append(f"K/V row mismatch: K >1ulp {int((dk>1).sum())}, V !=: {int((dv!=0).sum())}")
        if (dk == 1).any():  # how close to a rounding midpoint the float64 value is (in bf16 ulps)
            x = kr[dk == 1]; e = np.floor(np.log2(np.abs(x))); ulp = np.exp2(e - 7)
            st["k_1ulp_max_mid_dist"] = float(np.abs(np.abs(x/ulp - np.floor(x/ulp)) - 0.5).max())
        # rows other than pos (the C++ side checks all layers)
        other = np.ones(max_ctx, bool); other[pos] = False
        if not np.array_equal(d["ca"][:, other], d["cb"][:, other]): msgs.append("cache rows other than pos changed")
        # attention
        K = bits_to_f(d["cb"][0, :pos]).reshape(pos, NKV, HD); V = bits_to_f(d["cb"][1, :pos]).reshape(pos, NKV, HD)
        K = np.concatenate([K, kpos[None]], 0); V = np.concatenate([V, vpos[None]], 0)   # (ctx, NKV, HD)
        kvh = np.arange(NH) // group
        s = np.einsum("hd,jhd->hj", qr, K[:, kvh]) / np.sqrt(HD)
        p = np.exp(s - s.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
        oref = np.einsum("hj,jhd->hd", p, V[:, kvh]).reshape(-1)
        st["softmax_max_p"] = float(p.max(1).min())
    else:
        span = max((ctx + C - 1)//C, minc); first = max(0, C - (ctx + span - 1)//span)
        pp = d["part"][first:].astype(np.float64)
        mx = pp[:, :, HD].max(0); e = np.exp(pp[:, :, HD] - mx); l = (pp[:, :, HD+1]*e).sum(0)
        oref = ((pp[:, :, :HD]*e[:, :, None]).sum(0) / l[:, None]).reshape(-1)
        st["nonempty_chunks"] = C - first
        if not np.array_equal(d["ca"], d["cb"]): msgs.append("cache changed in the merge path")
    # attention output of each task: error relative to the head's max |o|
    scale_h = np.abs(oref.reshape(NH, HD)).max(1).repeat(HD)
    for nm in ("attnW", "attnR"):
        a = d[nm].astype(np.float64)
        st[f"o_rel_{nm[-1]}"] = float(np.nanmax(np.abs(a - oref) / scale_h)) if np.isfinite(a).all() else float("inf")
    # x1
    W = bits_to_f(d["wo"]); resid = d["resid"].astype(np.float64)
    x1 = resid + W @ oref; dev = d["out"].astype(np.float64)
    cond = np.abs(resid) + np.abs(W) @ np.abs(oref)
    for nm, rows in (("W", slice(0, rm)), ("R", slice(rm, H))):
        if rows.stop <= rows.start: continue
        err = np.abs(dev[rows] - x1[rows])
        st[f"x1_rel_norm_{nm}"] = float(err.max() / np.abs(x1[rows]).max()) if np.isfinite(err).all() else float("inf")
        st[f"x1_rel_cond_{nm}"] = float((err / cond[rows]).max()) if np.isfinite(err).all() else float("inf")
        st[f"x1_rel_elem_{nm}"] = float((err / np.abs(x1[rows])).max()) if np.isfinite(err).all() else float("inf")
    worst = max(st.get("x1_rel_norm_W", 0), st.get("x1_rel_norm_R", 0), st["o_rel_W"], st["o_rel_R"])
    if not worst <= 1e-4: msgs.append("numeric mismatch " + json.dumps({k: v for k, v in st.items() if "rel" in k}))
    return args, st, msgs

def cases():
    rnd = random.Random(11); cs = []
    def add(HD, NH, NKV, pos, dmc=256, max_ctx=None, layers=None, layer=None, H=None, rm=None, order=None, qscale=None, C=None, minc=16):
        max_ctx = max_ctx or max(dmc, pos + 1) + rnd.choice([0, 0, 5, 64])
        layers = layers or rnd.choice([1, 2, 3]); layer = rnd.randrange(layers) if layer is None else layer
        H = H or rnd.choice([32, 48, 80]); rm = rm if rm is not None else rnd.randint(1, H - 1)
        order = rnd.randint(0, 1) if order is None else order
        qscale = qscale or rnd.choice([1.0, 1.0, 3.0])
        C = C or rnd.randint(1, 16)
        cs.append((HD, NH, NKV, pos, dmc, max_ctx, layers, layer, H, rm, order, rnd.randint(0, 10**6), rnd.randint(0, 1), qscale, C, minc))
    # 1. direct path, direct_max_ctx 256: every head_dim x head layout, pos 0, 1, 31, 127, 255 + 2 random
    for HD in (2, 4, 6, 8, 10, 64, 128):
        for NH, NKV in ((1, 1), (4, 1), (9, 3), (32, 8)):
            for pos in (0, 1, 31, 127, 255, rnd.randint(2, 254), rnd.randint(2, 254)):
                add(HD, NH, NKV, pos)
    # 2. direct path, other direct_max_ctx (score stride), incl. pos = dmc - 1, max_context > dmc
    for dmc in (1, 2, 17, 64, 100):
        for HD, NH, NKV in ((8, 4, 1), (64, 9, 3), (128, 32, 8), (6, 4, 1)):
            add(HD, NH, NKV, dmc - 1, dmc=dmc, max_ctx=dmc + 40)
            add(HD, NH, NKV, rnd.randint(0, dmc - 1), dmc=dmc)
    # 3. merge path (ctx > direct_max_ctx), nc > 1 non-empty chunks, and dmc 0 (off)
    for HD, NH, NKV in ((64, 32, 8), (128, 32, 8), (64, 9, 3), (6, 4, 1), (2, 1, 1)):
        for dmc, pos in ((256, 256), (256, rnd.randint(300, 900)), (0, rnd.randint(40, 900)), (17, rnd.randint(100, 400))):
            add(HD, NH, NKV, pos, dmc=dmc, C=rnd.randint(4, 16), minc=rnd.choice([1, 16]))
    return cs

if __name__ == "__main__":
    os.makedirs(f"{E}/out", exist_ok=True)
    cs = cases()
    if len(sys.argv) > 2: cs = cs[:int(sys.argv[2])]
    agg = {}; nfail = 0; n_direct = 0; n_merge = 0
    sumkeys = ("k_elems", "k_exact", "k_1ulp", "k_gt1ulp", "k_exact_f32angle", "v_elems", "v_exact")
    with Pool(2) as pool:
        for args, st, msgs in pool.imap_unordered(check, cs):
            if args[3] + 1 <= args[4]: n_direct += 1
            else: n_merge += 1
            for k, v in st.items():
                if k in sumkeys: agg[k] = agg.get(k, 0) + v
                elif k in ("softmax_max_p",): agg["min_" + k] = min(agg.get("min_" + k, 1.0), v)
                else: agg["max_" + k] = max(agg.get("max_" + k, -1e300), v)
            if st.get("k_1ulp"): print("K 1ulp", args, st["k_1ulp"], "of", st["k_elems"], "max dist from midpoint (ulps)", st.get("k_1ulp_max_mid_dist"), flush=True)
            if msgs: nfail += 1; print("FAIL", args, "; ".join(msgs), flush=True)
    print(f"cases {len(cs)} (direct {n_direct}, merge {n_merge}), failed {nfail}")
    print("aggregate", json.dumps(agg, indent=1))
