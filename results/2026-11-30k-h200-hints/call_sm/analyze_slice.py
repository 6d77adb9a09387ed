import lzma,sys,numpy as np,collections
for f in sys.argv[1:]:
    r=np.array([l.split() for l in lzma.open(f,'rt')],dtype=np.int64)
    for sl in (1<<20, 4<<20):
        x=r[(r[:,0]==sl)&(r[:,1]>=4)]
        res=[]
        for par in (0,1):
            d=collections.defaultdict(list)
            for it in set(x[:,1]):
                if it%2!=par: continue
                y=x[x[:,1]==it]; med=np.median(y[:,5])
                for row in y: d[(row[3]+row[2])%132].append(row[5]/med)
            res.append(np.array([np.mean(d[s]) for s in range(132)]))
        a=(res[0]+res[1])/2
        print(f, sl>>10, "per-slice even/odd corr", round(np.corrcoef(res[0],res[1])[0,1],3), "range", round(a.min(),3), round(a.max(),3))
print("cross-run per-slice")
A=[]
for f in sys.argv[1:]:
    r=np.array([l.split() for l in lzma.open(f,'rt')],dtype=np.int64)
    x=r[(r[:,0]==4<<20)&(r[:,1]>=4)]
    d=collections.defaultdict(list)
    for it in set(x[:,1]):
        y=x[x[:,1]==it]; med=np.median(y[:,5])
        for row in y: d[(row[3]+row[2])%132].append(row[5]/med)
    A.append(np.array([np.mean(d[s]) for s in range(132)]))
print(np.round(np.corrcoef(np.array(A)),3))
print(' '.join(f"{v:.3f}" for v in A[0]))
