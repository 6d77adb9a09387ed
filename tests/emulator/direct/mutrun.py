# The unchanged op (bin/DA) and every mutant of mutate.py on the same cases; a
# mutant counts as detected when the checker reports something (race, bounds, alignment, cache
# rule) or the result differs from the float64 reference (compare_da.check). The unchanged op
# must be clean.
import glob, os, sys, re
from multiprocessing import Pool
import compare_da as c
#        HD  NH NKV pos dmc max_ctx layers layer H  rm order seed poison qscale C  minc
CASES = [(64, 32, 8, 255, 256, 300, 2, 1, 48, 20, 0, 101, 1, 1.0, 4, 16),
         (128, 32, 8, 127, 256, 256, 1, 0, 32, 10, 1, 102, 0, 3.0, 4, 16),
         (6, 9, 3, 31, 256, 256, 3, 2, 48, 30, 0, 103, 1, 1.0, 4, 16),
         (2, 1, 1, 1, 256, 256, 1, 0, 32, 16, 1, 104, 0, 1.0, 4, 16),
         (8, 4, 1, 0, 256, 256, 2, 1, 32, 5, 0, 105, 1, 1.0, 4, 16),
         (64, 4, 1, 100, 128, 200, 2, 0, 80, 40, 1, 106, 1, 3.0, 4, 16),
         (64, 32, 8, 300, 256, 400, 2, 1, 48, 20, 0, 107, 1, 1.0, 8, 16),   # merge path
         (10, 9, 3, 500, 256, 600, 1, 0, 32, 11, 1, 108, 0, 1.0, 16, 1)]   # merge path
def one(job):
    b, case = job
    c.BIN = b
    args, st, msgs = c.check(case)
    return b, case, msgs
if __name__ == "__main__":
    bins = [f"{c.E}/bin/DA"] + sorted(p for p in glob.glob(f"{c.E}/mut/*") if not p.endswith(".cuh"))
    jobs = [(b, k) for b in bins for k in CASES]
    res = {}
    with Pool(2) as pool:
        for b, case, msgs in pool.imap(one, jobs):
            res.setdefault(b, []).append((case, msgs))
    for b in bins:
        det = sum(1 for _, m in res[b] if m)
        print(f"== {os.path.basename(b)}: {det}/{len(CASES)} cases reported")
        for case, msgs in res[b]:
            path = "direct" if case[3] + 1 <= case[4] else "merge"
            s = "; ".join(msgs)
            s = re.sub(r"\{.*\}", lambda m: m.group(0)[:160], s)
            print(f"   {path} {case[:4]}: {'clean' if not msgs else s[:400]}")
