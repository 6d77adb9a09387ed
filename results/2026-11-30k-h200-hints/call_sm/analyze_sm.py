import lzma,sys,numpy as np,collections
runs=[]
for f in sys.argv[1:]:
    rows=[l.split() for l in lzma.open(f,'rt')]
    runs.append(np.array(rows,dtype=np.int64))
for sl in sorted(set(runs[0][:,0])):
    persm=[]
    for r in runs:
        x=r[r[:,0]==sl]
        x=x[x[:,1]>=4]  # skip warmup
        # per iteration, normalise by median
        d=collections.defaultdict(list)
        for it in set(x[:,1]):
            y=x[x[:,1]==it]; med=np.median(y[:,5])
            for row in y: d[row[4]].append(row[5]/med)
        persm.append({s:np.mean(v) for s,v in d.items()})
    sms=sorted(persm[0])
    M=np.array([[p[s] for s in sms] for p in persm])
    # half-split within run: even vs odd iterations
    x=runs[0][(runs[0][:,0]==sl)&(runs[0][:,1]>=4)]
    def half(par):
        d=collections.defaultdict(list)
        for it in set(x[:,1]):
            if it%2!=par: continue
            y=x[x[:,1]==it]; med=np.median(y[:,5])
            for row in y: d[row[4]].append(row[5]/med)
        return np.array([np.mean(d[s]) for s in sms])
    print(f"slice {sl>>10} KB: median us {np.median(x[:,5])/1e3:.2f}; per-SM mean ratio range {M.min():.3f}..{M.max():.3f}; run corr", np.round(np.corrcoef(M)[0,1:],3), "even/odd corr", round(np.corrcoef(half(0),half(1))[0,1],3))
    a=M.mean(0); o=np.argsort(a)
    print("   slowest SMs", [(sms[i],round(a[i],3)) for i in o[-8:]], " fastest", [(sms[i],round(a[i],3)) for i in o[:5]])
    # max over blocks per iteration / median
    mx=[]
    for it in set(x[:,1]):
        y=x[x[:,1]==it]; mx.append(y[:,5].max()/np.median(y[:,5]))
    print("   wave max/median per launch: median", round(np.median(mx),3))
    # sorted pattern: group into clusters
    print("   per-SM ratio by smid:", ' '.join(f"{v:.2f}" for v in a))
