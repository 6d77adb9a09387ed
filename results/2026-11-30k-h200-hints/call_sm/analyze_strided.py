"""Per launch: the slowest block over the median, and how fixed each block's / slice's share is,
for contiguous and strided slices (smspeed2.cu output: size launch rotation block smid ns strided)."""
import collections, lzma, sys
import numpy as np
runs = [np.array([l.split() for l in lzma.open(f, 'rt')], dtype=np.int64) for f in sys.argv[1:]]
for strided in (0, 1):
    for sl in sorted(set(runs[0][:, 0])):
        mx, med, cors = [], [], []
        per = []
        for r in runs:
            x = r[(r[:, 0] == sl) & (r[:, 6] == strided) & (r[:, 1] >= 4)]
            d = collections.defaultdict(list)
            for it in sorted(set(x[:, 1])):
                y = x[x[:, 1] == it]
                m = np.median(y[:, 5])
                mx.append(y[:, 5].max() / m); med.append(m / 1e3)
                for row in y: d[(row[3] + row[2]) % 132].append(row[5] / m)
            per.append(np.array([np.mean(d[s]) for s in range(132)]))
        print(f"{'strided' if strided else 'contig '} {sl >> 10:5d} KB: median {np.median(med):7.2f} us, "
              f"slowest/median per launch {np.median(mx):.3f} (mean {np.mean(mx):.3f}), per-slice range "
              f"{per[0].min():.3f}-{per[0].max():.3f}, run1/run2 slice corr {np.corrcoef(per[0], per[1])[0, 1]:.2f}")
