import torch, math
torch.manual_seed(0)
PE=[(8.28721201814563,-23.595886519098837,17.300387312530933),(4.107059111542203,-2.9478499167379106,0.5448431082926601),(3.9486908534822946,-2.908902115962949,0.5518191394370137),(3.3184196573706015,-2.488488024314874,0.51004894012372),(2.300652019954817,-1.6689039845747493,0.4188073119525673),(1.891301407787398,-1.2679958271945868,0.37680408948524835),(1.8750014808534479,-1.2500016453999487,0.3750001645474248)]
def sched(kind):
    if kind=='jordan': return [(3.4445,-4.7750,2.0315)]*5, 1.0
    s=1.01; return [(a/s,b/s**3,c/s**5) for a,b,c in PE[:5]], s
def ns(G, kind, dt):
    co,s=sched(kind)
    X=G.to(dt)
    if G.size(0)>G.size(1): X=X.mT
    X=X/(X.norm()*s+1e-7)
    for a,b,c in co:
        A=X@X.mT; B=b*A+c*A@A; X=a*X+B@X
    if G.size(0)>G.size(1): X=X.mT
    return X.double()
def known(r,c,sv):
    q=min(r,c)
    U,_=torch.linalg.qr(torch.randn(r,q,dtype=torch.float64)); V,_=torch.linalg.qr(torch.randn(c,q,dtype=torch.float64))
    return ((U*sv)@V.T).float()
worst={}
for (r,c) in [(48,96),(64,64),(96,40),(768,768),(768,3072),(3072,768)]:
    q=min(r,c)
    for spec in range(3):
        sv=torch.tensor([1.0 if spec==0 else (1e-3**(i/(q-1)) if spec==1 else (1.0 if i==0 else 0.05)) for i in range(q)],dtype=torch.float64)
        for kind in ('jordan','pe'):
            errs=[]
            for trial in range(3):
                G=known(r,c,sv)
                R=ns(G.double(),kind,torch.float64)
                O=ns(G,kind,torch.bfloat16)
                errs.append(((O-R).norm()/R.norm()).item())
            print(r,c,spec,kind,"torch bf16 rel err max %.4g"%max(errs))
