# Direct-path x1 elements whose elementwise relative error exceeds 1e-4, and how
# small |x1| is there against |resid| + |Wo| |o| (cancellation), over compare_da.py's cases.
import numpy as np, compare_da as c
from multiprocessing import Pool
def elem(args):
    (HD, NH, NKV, pos, dmc, max_ctx, layers, layer, H, rm, order, seed, poison, qscale, C, minc) = args
    if pos + 1 > dmc: return None
    r, d = c.run(args); Q = NH*HD; KV = NKV*HD; group = NH//NKV
    qkv = d["qkv"].astype(np.float64); q = qkv[:Q].reshape(NH, HD); k = qkv[Q:Q+KV].reshape(NKV, HD); v = qkv[Q+KV:].reshape(NKV, HD)
    ang = pos*d["rope"].astype(np.float64); qr = c.rope(q, ang); kpos = c.bf16_round(c.rope(k, ang)); vpos = c.bf16_round(v)
    K = np.concatenate([c.bits_to_f(d["cb"][0, :pos]).reshape(pos, NKV, HD), kpos[None]]); V = np.concatenate([c.bits_to_f(d["cb"][1, :pos]).reshape(pos, NKV, HD), vpos[None]])
    kvh = np.arange(NH)//group; s = np.einsum("hd,jhd->hj", qr, K[:, kvh])/np.sqrt(HD); p = np.exp(s - s.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
    o = np.einsum("hj,jhd->hd", p, V[:, kvh]).reshape(-1); W = c.bits_to_f(d["wo"]); res = d["resid"].astype(np.float64)
    x1 = res + W@o; err = np.abs(d["out"] - x1); cond = np.abs(res) + np.abs(W)@np.abs(o)
    bad = err/np.abs(x1) > 1e-4
    return H, int(bad.sum()), [(float(abs(x1[i])), float(cond[i]), float(err[i]/abs(x1[i]))) for i in np.where(bad)[0]]
if __name__ == "__main__":
    tot = n = 0; worst = []
    with Pool(2) as pool:
        for rr in pool.imap_unordered(elem, c.cases()):
            if rr is None: continue
            tot += rr[0]; n += rr[1]; worst += rr[2]
    print("direct-path x1 elements", tot, "; elementwise relative error > 1e-4:", n)
    worst.sort(key=lambda t: -t[2]); print("worst 5 (|x1|, |resid|+|Wo||o|, rel err):", worst[:5])
    print("largest |x1| / (|resid|+|Wo||o|) among them:", max(t[0]/t[1] for t in worst) if worst else None)
