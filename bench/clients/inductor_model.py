import time, torch
class M(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.l1 = torch.nn.Linear(256, 512); s.l2 = torch.nn.Linear(512, 256); s.ln = torch.nn.LayerNorm(256)
    def forward(s, x):
        h = torch.nn.functional.gelu(s.l1(x))
        return s.ln(s.l2(h) + x).softmax(-1)
torch.manual_seed(0)
m = M().cuda(); x = torch.randn(64, 256, device="cuda", requires_grad=True)
f = torch.compile(m)
t1 = time.time()
f(x).sum().backward(); torch.cuda.synchronize()
print(f"compile+first step {time.time() - t1:.2f}s")
