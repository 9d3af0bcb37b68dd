"""The PyTorch twin of `attend explain --json FILE`: reads every number attend
wrote (inputs, parameters, intermediates, and each gradient, analytic and
numeric), rebuilds the same computation in plain torch float64 from the inputs
and parameters alone, and recomputes every value and every gradient with
torch.autograd. Exits 0 when all agree, 1 when one does not (naming it), and 77
(CTest's SKIP_RETURN_CODE in tests/CMakeLists.txt) when torch is not installed.

    attend explain --attention general --padded --json step.json
    attend explain --lstm --json lstm.json
    /usr/bin/python3 tests/reference/torch_explain.py step.json lstm.json

Run it with Debian's python3-torch (/usr/bin/python3), not a python without torch.
"""
import json
import sys

try:
    import torch
except ImportError:
    print("SKIPPED: torch is not installed for this python (apt-get install python3-torch, run /usr/bin/python3)")
    sys.exit(77)

torch.set_default_dtype(torch.float64)

# attend's analytic gradients against torch's: the same math in float64, so only
# rounding separates them. Finite differences are looser (step 1e-5).
ATOL, RTOL = 1e-12, 1e-9
FD_ATOL, FD_RTOL = 1e-8, 1e-5


class Checker:
    def __init__(self, path):
        self.path = path
        self.compared = 0
        self.failures = []

    def same(self, what, attend, ours, atol=ATOL, rtol=RTOL):
        a = torch.as_tensor(attend, dtype=torch.float64).flatten()
        b = ours.detach().flatten()
        self.compared += 1
        if a.shape != b.shape:
            self.failures.append(f"{what}: attend has {a.numel()} numbers, torch {b.numel()}")
            return
        bad = (a - b).abs() > atol + rtol * b.abs()
        if bool(bad.any()):
            i = int(bad.nonzero()[0])
            self.failures.append(f"{what}[{i}]: attend {float(a[i])!r}, torch {float(b[i])!r}")


def tensor(values, name, grad=False):
    v = values[name]
    t = torch.tensor(v["data"]).reshape(v["shape"])
    return t.requires_grad_(grad)


def kept(t):
    t.retain_grad()
    return t


def attention(d, check):
    val = d["values"]
    kind = d["attention"]
    H = tensor(val, "H", True)
    s = tensor(val, "s", True)
    mask = tensor(val, "mask")
    params = {}
    names = {"additive": ["W_q", "W_k", "b", "v"], "dot": ["W_Q", "W_K"], "general": ["W"]}[kind]
    for n in names:
        params[n] = tensor(val, n, True)
    W_c, b_c = tensor(val, "W_c"), tensor(val, "b_c")
    W_out, b_out = tensor(val, "W_out"), tensor(val, "b_out")
    if kind == "additive":
        q = params["W_q"] @ s + params["b"]
        k = H @ params["W_k"].T
        t = torch.tanh(k + q)
        e = t @ params["v"]
        check.same("values.t", val["t"]["data"], t)
    elif kind == "dot":
        q = params["W_Q"] @ s
        k = H @ params["W_K"].T
        e = val["scale"] * (k @ q)
    else:
        q = s
        k = H @ params["W"].T
        e = k @ s
    check.same("values.q", val["q"]["data"], q)
    check.same("values.k", val["k"]["data"], k)
    e = kept(e)
    alpha = kept(torch.softmax(e.masked_fill(mask == 0, float("-inf")), dim=0))
    c = kept(alpha @ H)
    h_tilde = kept(torch.tanh(W_c @ torch.cat([s, c]) + b_c))
    z = kept(W_out @ h_tilde + b_out)
    loss = -torch.log_softmax(z, dim=0)[d["target"]]
    loss.backward()
    for name, ours in [("e", e), ("alpha", alpha), ("c", c), ("h_tilde", h_tilde), ("z", z),
                       ("p", torch.softmax(z, dim=0))]:
        check.same(f"values.{name}", val[name]["data"], ours)
    check.same("loss", [d["loss"]], loss.reshape(1))
    grads = {"z": z.grad, "h_tilde": h_tilde.grad, "c": c.grad, "alpha": alpha.grad, "e": e.grad,
             "s": s.grad, "H": H.grad}
    grads.update({n: p.grad for n, p in params.items()})
    return grads


def lstm(d, check):
    val = d["values"]
    W_ih, W_hh = tensor(val, "W_ih", True), tensor(val, "W_hh", True)
    b_ih, b_hh = tensor(val, "b_ih", True), tensor(val, "b_hh", True)
    x, r = tensor(val, "x"), tensor(val, "r")
    h = tensor(val, "h_0", True)
    c = tensor(val, "c_0", True)
    h0, c0 = h, c
    hidden = h.numel()
    # torch's own LSTMCell with attend's weights: a second road to h_t and c_t.
    cell = torch.nn.LSTMCell(x.shape[1], hidden)
    with torch.no_grad():
        cell.weight_ih.copy_(W_ih)
        cell.weight_hh.copy_(W_hh)
        cell.bias_ih.copy_(b_ih)
        cell.bias_hh.copy_(b_hh)
    grads, values = {}, {n: [] for n in "aifgoch"}
    loss = 0
    taps = []
    ref_h, ref_c = h0.detach()[None], c0.detach()[None]
    for t in range(x.shape[0]):
        a = kept(W_ih @ x[t] + b_ih + W_hh @ h + b_hh)
        i = kept(torch.sigmoid(a[:hidden]))
        f = kept(torch.sigmoid(a[hidden:2 * hidden]))
        g = kept(torch.tanh(a[2 * hidden:3 * hidden]))
        o = kept(torch.sigmoid(a[3 * hidden:]))
        c_t = kept(f * c + i * g)
        c_h = kept(c_t.clone())      # c on the h path: h_t = o tanh(c_t)
        c_next = kept(c_t.clone())   # c on the c path: the next step's f * c
        h = kept(o * torch.tanh(c_h))
        c = c_next
        loss = loss + (r[t] * h).sum()
        taps.append((t + 1, a, i, f, g, o, c_t, c_h, c_next, h))
        for n, v in zip("aifgoch", (a, i, f, g, o, c_t, h)):
            values[n].append(v.detach())
        with torch.no_grad():
            ref_h, ref_c = cell(x[t][None], (ref_h, ref_c))
        check.same(f"torch.nn.LSTMCell h_{t + 1}", ref_h[0], h)
        check.same(f"torch.nn.LSTMCell c_{t + 1}", ref_c[0], c_t)
    loss.backward()
    for n in "aifgoch":
        check.same(f"values.{n}", val[n]["data"], torch.stack(values[n]))
    check.same("loss", [d["loss"]], loss.reshape(1))
    for (s, a, i, f, g, o, c_t, c_h, c_next, h) in taps:
        zero = torch.zeros_like(c_t)
        grads.update({f"h_{s}": h.grad, f"c_h_path_{s}": c_h.grad,
                      f"c_c_path_{s}": c_next.grad if c_next.grad is not None else zero,
                      f"c_{s}": c_t.grad, f"i_{s}": i.grad, f"f_{s}": f.grad, f"g_{s}": g.grad,
                      f"o_{s}": o.grad, f"a_{s}": a.grad})
    grads.update({"h_0": h0.grad, "c_0": c0.grad, "W_ih": W_ih.grad, "W_hh": W_hh.grad, "b": b_ih.grad})
    check.same("b_hh.grad equals b_ih.grad", b_ih.grad, b_hh.grad)
    return grads


def main(paths):
    if not paths:
        print(__doc__)
        return 2
    ok = True
    for path in paths:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        check = Checker(path)
        grads = lstm(d, check) if d["kind"] == "lstm" else attention(d, check)
        if set(grads) != set(d["gradients"]):
            check.failures.append(f"gradients: attend wrote {sorted(d['gradients'])}, torch made {sorted(grads)}")
        for name, ours in grads.items():
            if name not in d["gradients"]:
                continue
            g = d["gradients"][name]
            check.same(f"gradients.{name} (analytic)", g["analytic"], ours)
            check.same(f"gradients.{name} (numeric)", g["numeric"], ours, FD_ATOL, FD_RTOL)
        rows = sum(len(g["analytic"]) for g in d["gradients"].values())
        if check.failures:
            ok = False
            print(f"{path}: {len(check.failures)} of {check.compared} comparisons differ:")
            for line in check.failures:
                print("  " + line)
        else:
            print(f"{path}: all {check.compared} comparisons agree ({rows} gradient numbers, "
                  f"{len(d['values'])} value tensors)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
