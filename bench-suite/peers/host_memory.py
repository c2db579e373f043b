"""Host memory costs behind a pipelined transfer, with PyTorch on the GPU machine: registering (page-locking) an
existing or a fresh 256 MiB NumPy array with cudaHostRegister and copying to and from it, registering it in 8 MiB
pieces, the first and second fill of a fresh 256 MiB tensor on every core, and 256 MiB host copies between pageable and
pinned memory on every core. Run: python3 bench-suite/peers/host_memory.py (prints the THP settings first)."""
import time, numpy as np, torch, ctypes, os
def t(f, n=5):
    xs=[]
    for _ in range(n):
        torch.cuda.synchronize(); s=time.perf_counter(); f(); torch.cuda.synchronize(); xs.append(time.perf_counter()-s)
    xs.sort(); return xs[len(xs)//2]*1e3
print(open('/sys/kernel/mm/transparent_hugepage/enabled').read().strip(), open('/sys/kernel/mm/transparent_hugepage/defrag').read().strip())
print(torch.get_num_threads(), "torch threads")
N=1<<26
cud=torch.cuda.cudart()
a=np.ones(N,dtype=np.float32)
d=torch.empty(N,device='cuda')
def reg(arr):
    r=cud.cudaHostRegister(arr.ctypes.data, arr.nbytes, 0); assert int(r)==0, r
def unreg(arr):
    r=cud.cudaHostUnregister(arr.ctypes.data); assert int(r)==0, r
for i in range(3):
    s=time.perf_counter(); reg(a); r1=time.perf_counter()-s
    ta=torch.from_numpy(a)
    h2d=t(lambda: d.copy_(ta, non_blocking=True))
    s=time.perf_counter(); unreg(a); r2=time.perf_counter()-s
    print(f"register touched 256MiB {r1*1e3:.2f} ms, h2d registered {h2d:.2f} ms, unregister {r2*1e3:.2f} ms")
for i in range(3):
    b=np.empty(N,dtype=np.float32)
    s=time.perf_counter(); reg(b); r1=time.perf_counter()-s
    tb=torch.from_numpy(b)
    s=time.perf_counter(); tb.copy_(d, non_blocking=True); torch.cuda.synchronize(); d2h=time.perf_counter()-s
    s=time.perf_counter(); unreg(b); r2=time.perf_counter()-s
    print(f"register fresh 256MiB {r1*1e3:.2f} ms, d2h into it {d2h*1e3:.2f} ms, unregister {r2*1e3:.2f} ms")
    del b, tb
# chunked registration cost
chunk=8<<20
for i in range(2):
    b=np.ones(N,dtype=np.float32)
    base=b.ctypes.data; start=(base+4095)//4096*4096
    s=time.perf_counter(); k=0
    p=start
    while p+chunk<=base+b.nbytes:
        r=cud.cudaHostRegister(p, chunk, 0); assert int(r)==0; p+=chunk; k+=1
    r1=time.perf_counter()-s
    s=time.perf_counter(); p=start
    for _ in range(k):
        cud.cudaHostUnregister(p); p+=chunk
    print(f"{k} chunk registrations of 8 MiB {r1*1e3:.2f} ms, unregistrations {(time.perf_counter()-s)*1e3:.2f} ms")
# fresh first touch in parallel
for i in range(3):
    s=time.perf_counter(); x=torch.empty(N); x.fill_(1.0); f1=time.perf_counter()-s
    s=time.perf_counter(); x.fill_(2.0); f2=time.perf_counter()-s
    print(f"torch fresh first fill {f1*1e3:.2f} ms, second {f2*1e3:.2f} ms")
    del x
src=torch.ones(N); pin=torch.empty(N).pin_memory(); 
print(f"host copy pageable->pinned {t(lambda: pin.copy_(src)):.2f} ms, pinned->pageable {t(lambda: src.copy_(pin)):.2f} ms")
print(open('/proc/meminfo').read().split('AnonHugePages')[1].split('\n')[0])
