"""Replacement-layer fits in PyTorch eager (Debian python3-torch 1.13), written from the papers as a
researcher would, for fit_throughput's comparison (benchmark_fits_vs_pytorch): the same layers (formulas,
initialisation, parameter counts), shapes, objective and optimiser as layers/replacement and
layers/attention/lorsa, on random activations sampled from a cache-sized tensor each step. The algorithms
differ where the papers' pseudo-code is dense: here the top-k codes are scattered into a dense code that a
dense matmul decodes and the ReLU and top-k are differentiated densely, where this project gathers the k
selected rows (SparseDot, embedding_bag); the ratio measures both the framework and that choice.

- Transcoder (Dunefsky et al. 2024): y = TopK(ReLU(x W_enc + b_enc)) W_dec + b_dec, decoder rows at unit
  norm with their gradients' parallel part removed (the MxD authors' released code, norm_dec).
- Skip Transcoder (Paulo et al. 2025): the Transcoder plus x W_skip; W_dec and W_skip start at zero.
- TopK SAE (Gao et al. 2024) on the FFN output: z = TopK(ReLU((y - b_dec) W_enc + b_enc)), y_hat = z W_dec
  + b_dec.
- MxD (arXiv:2505.21364 Eq. 5): y = (a C) * (GELU(x E + b_e) D) + b_out, a = TopK(ReLU(x G^T + b_g)).
- Lorsa (arXiv:2504.20938 Sec. 3.1, Algorithm 1): H_QK rotary QK heads, each shared by H / H_QK rank-1 OV
  heads; the top K heads per token by ReLU(z) ||w_o|| write z w_o; loss the batch FVU.
Normalised MSE (layers/replacement/nmse.h); AdamW without weight decay; clipping at 0.15 for Lorsa only."""
import argparse
import math
import time

import torch
import torch.nn.functional as F

CACHED_ROWS = 65536


def uniform(shape, fan_in):
    return torch.nn.Parameter(torch.empty(shape).uniform_(-1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in)))


def unit_rows(w):
    return w / w.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def relu_topk_dense(pre, k):
    """The (B, width) code: the k largest ReLU'd entries kept, zeros elsewhere."""
    values, indices = F.relu(pre).topk(k, dim=-1)
    return torch.zeros_like(pre).scatter(-1, indices, values)


class Transcoder(torch.nn.Module):
    def __init__(self, d, width, k, skip=False, sae=False):
        super().__init__()
        self.k, self.sae = k, sae
        self.w_enc = uniform((d, width), d)
        self.b_enc = torch.nn.Parameter(torch.zeros(width))
        if skip:
            self.w_dec = torch.nn.Parameter(torch.zeros(width, d))
            self.w_skip = torch.nn.Parameter(torch.zeros(d, d))
        else:
            self.w_dec = torch.nn.Parameter(unit_rows(uniform((width, d), width).data))
            self.w_skip = None
        if sae:  # Encoder initialised to the decoder's transpose (Gao et al. 2024).
            self.w_enc = torch.nn.Parameter(self.w_dec.detach().t().contiguous())
        self.b_dec = torch.nn.Parameter(torch.zeros(d))

    def decoder_rows(self):
        return None if self.w_skip is not None else self.w_dec

    def forward(self, x):
        inp = x - self.b_dec if self.sae else x
        z = relu_topk_dense(inp @ self.w_enc + self.b_enc, self.k)
        y = z @ self.w_dec + self.b_dec
        return y if self.w_skip is None else y + x @ self.w_skip


class Mxd(torch.nn.Module):
    def __init__(self, d, hidden, experts, k):
        super().__init__()
        self.k = k
        self.e = uniform((d, hidden), d)
        self.b_e = torch.nn.Parameter(torch.zeros(hidden))
        self.dec = torch.nn.Parameter(torch.zeros(hidden, d))
        self.c = torch.nn.Parameter(unit_rows(torch.empty(experts, d).uniform_(-1, 1)))
        self.g = uniform((experts, d), d)
        self.b_g = torch.nn.Parameter(torch.zeros(experts))
        self.b_out = torch.nn.Parameter(torch.zeros(d))

    def decoder_rows(self):
        return self.c

    def forward(self, x):
        a = relu_topk_dense(x @ self.g.t() + self.b_g, self.k)
        return (a @ self.c) * (F.gelu(x @ self.e + self.b_e) @ self.dec) + self.b_out


def rotate(x, base=10000.0):
    """Rotary positions on the last dimension (two halves), x: (B, G, T, D)."""
    t, dim = x.shape[-2], x.shape[-1]
    inv = base ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angle = torch.arange(t, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x[..., : dim // 2], x[..., dim // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Lorsa(torch.nn.Module):
    def __init__(self, d, qk_heads, qk_dim, ov_heads, k, window):
        super().__init__()
        self.k, self.qk_heads, self.qk_dim, self.ov_heads = k, qk_heads, qk_dim, ov_heads
        # Kaiming normal (fan_in, ReLU gain), zero biases, unit-norm output rows (the authors' released code).
        std = math.sqrt(2.0 / d)
        self.w_q = torch.nn.Parameter(torch.randn(qk_heads, d, qk_dim) * std)
        self.w_k = torch.nn.Parameter(torch.randn(qk_heads, d, qk_dim) * std)
        self.b_q = torch.nn.Parameter(torch.zeros(qk_heads, qk_dim))
        self.b_k = torch.nn.Parameter(torch.zeros(qk_heads, qk_dim))
        self.w_v = torch.nn.Parameter(torch.randn(ov_heads, d) * std)
        self.b_v = torch.nn.Parameter(torch.zeros(ov_heads))
        self.w_o = torch.nn.Parameter(unit_rows(torch.randn(ov_heads, d)))
        self.b_o = torch.nn.Parameter(torch.zeros(d))
        self.register_buffer("mask", torch.full((window, window), float("-inf")).triu(1))

    def decoder_rows(self):
        return None

    def forward(self, x):
        b, t, d = x.shape
        q = rotate(torch.einsum("btd,gdk->bgtk", x, self.w_q) + self.b_q[:, None, :])
        key = rotate(torch.einsum("btd,gdk->bgtk", x, self.w_k) + self.b_k[:, None, :])
        pattern = (q @ key.transpose(-2, -1) / math.sqrt(self.qk_dim) + self.mask[:t, :t]).softmax(-1)
        v = (x @ self.w_v.t() + self.b_v).view(b, t, self.qk_heads, -1)
        z = torch.einsum("bgts,bsgh->btgh", pattern, v).reshape(b, t, self.ov_heads)
        kept = F.relu(z)
        with torch.no_grad():
            selected = (kept * self.w_o.norm(dim=1)).topk(self.k, dim=-1).indices
        code = torch.zeros_like(kept).scatter(-1, selected, kept.gather(-1, selected))
        return code @ self.w_o + self.b_o


def make_fit(args):
    if args.fit == "lorsa":
        return Lorsa(args.d_model, args.qk_heads, args.qk_dim, args.width, args.top_k, args.window)
    if args.fit == "mxd_gelu":
        return Mxd(args.d_model, args.hidden, args.width, args.top_k)
    return Transcoder(args.d_model, args.width, args.top_k, skip=args.fit == "skip_transcoder",
                      sae=args.fit == "topk_sae")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fit", default="transcoder",
                        choices=["transcoder", "skip_transcoder", "topk_sae", "mxd_gelu", "lorsa"])
    parser.add_argument("--d_model", type=int, default=128)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--top_k", type=int, default=8)
    parser.add_argument("--qk_heads", type=int, default=8)
    parser.add_argument("--qk_dim", type=int, default=8)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    layer = make_fit(args)
    lorsa = args.fit == "lorsa"
    d = args.d_model
    window = args.window if lorsa else 1
    units = args.rows // window
    optimizer = torch.optim.AdamW(layer.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)
    cached_x, cached_y = torch.randn(CACHED_ROWS, d), torch.randn(CACHED_ROWS, d)
    rows = layer.decoder_rows()

    def step():
        starts = torch.randint(0, CACHED_ROWS // window, (units,)) * window
        index = (starts[:, None] + torch.arange(window)).view(-1)
        x, y = cached_x[index], cached_y[index]
        if rows is not None:
            with torch.no_grad():
                rows.copy_(unit_rows(rows))
        optimizer.zero_grad(set_to_none=True)
        if lorsa:
            prediction = layer(x.view(units, window, d)).reshape(-1, d)
            loss = (prediction - y).square().sum() / (y - y.mean(0, keepdim=True)).square().sum()
        else:
            prediction = layer(y if args.fit == "topk_sae" else x)
            loss = ((prediction - y).pow(2) / y.norm(dim=-1, keepdim=True)).mean()  # layers/replacement/nmse.h
        loss.backward()
        if rows is not None:
            with torch.no_grad():
                unit = unit_rows(rows)
                rows.grad -= (rows.grad * unit).sum(-1, keepdim=True) * unit
        if lorsa:
            torch.nn.utils.clip_grad_norm_(layer.parameters(), 0.15)
        optimizer.step()

    for _ in range(3):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = time.perf_counter() - start
    params = sum(p.numel() for p in layer.parameters())
    print(f"pytorch-eager fit={args.fit} d={d} width={args.width} K={args.top_k} rows={units * window} "
          f"params={params}: {args.steps * units * window / seconds:.0f} rows/s")


if __name__ == "__main__":
    main()
