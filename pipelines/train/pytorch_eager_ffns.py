"""The sparse FFNs in PyTorch eager, written from their papers as a researcher would write them
(expert loops with index_add_, embedding gathers and einsums), for pytorch_eager_throughput.py's
side-by-side training benchmark. Each takes and returns (tokens, d) and may add an auxiliary loss;
shapes, initial scales and active FLOPs follow the layers of layers/ffn and layers/mohd."""
import math

import torch
import torch.nn.functional as F


def normal(*shape, std):
    return torch.nn.Parameter(torch.randn(*shape) * std)


class Mixture(torch.nn.Module):
    """Switch (learned top-k router, GELU experts) and MoE-X (arXiv:2503.07639 Sec. 3.2: ReLU experts,
    the router scores -erf(mu / (sqrt(2) sigma)) from the encoder's column statistics)."""

    def __init__(self, d, d_ffn, experts, top_k, layers, sparsity_router):
        super().__init__()
        self.top_k, self.sparsity_router = top_k, sparsity_router
        self.encoders = normal(experts, d_ffn, d, std=0.02)
        self.decoders = normal(experts, d_ffn, d, std=0.02 / math.sqrt(2 * layers))
        self.router = None if sparsity_router else normal(experts, d, std=0.02)
        self.auxiliary = None

    def forward(self, x):
        if self.sparsity_router:
            mu = x @ self.encoders.mean(1).t()
            sigma = ((x * x) @ self.encoders.var(1, unbiased=False).t() + 1e-6).sqrt()
            scores = -torch.erf(mu / (math.sqrt(2) * sigma))
        else:
            scores = x @ self.router.t()
        with torch.no_grad():
            chosen = scores.topk(self.top_k, -1).indices
        weights = scores.gather(-1, chosen).softmax(-1)
        experts = self.encoders.shape[0]
        probabilities = scores.softmax(-1)  # Switch load balance, lambda = 0.001.
        fraction = F.one_hot(probabilities.argmax(-1), experts).float().mean(0)
        self.auxiliary = 0.001 * experts * (fraction * probabilities.mean(0)).sum()
        act = F.relu if self.sparsity_router else F.gelu
        out = torch.zeros_like(x)
        for j in range(experts):
            token, slot = (chosen == j).nonzero(as_tuple=True)
            if token.numel() == 0:
                continue
            y = act(x[token] @ self.encoders[j].t()) @ self.decoders[j]
            out.index_add_(0, token, y * weights[token, slot, None])
        return out

    def flops(self, d):
        e, f, _ = self.encoders.shape
        return self.top_k * 2 * 2 * d * f + 2 * d * e


class GptOssMoe(torch.nn.Module):
    """GPT-OSS's MoE: softmax router, top-k, experts are clamped GLUs with biases."""

    def __init__(self, d, d_ffn, experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.router = normal(experts, d, std=1 / math.sqrt(d))
        self.w1 = normal(experts, 2 * d_ffn, d, std=1 / math.sqrt(d))
        self.b1 = torch.nn.Parameter(torch.zeros(experts, 2 * d_ffn))
        self.w2 = normal(experts, d, d_ffn, std=1 / math.sqrt(d_ffn))
        self.b2 = torch.nn.Parameter(torch.zeros(experts, d))
        self.auxiliary = None

    def forward(self, x):
        p = (x @ self.router.t()).softmax(-1)
        with torch.no_grad():
            chosen = p.topk(self.top_k, -1).indices
        weights = p.gather(-1, chosen)
        f = self.w1.shape[1] // 2
        out = torch.zeros_like(x)
        for j in range(self.w1.shape[0]):
            token, slot = (chosen == j).nonzero(as_tuple=True)
            if token.numel() == 0:
                continue
            ab = torch.addmm(self.b1[j], x[token], self.w1[j].t())
            a, b = ab[:, :f].clamp(max=7.0), ab[:, f:].clamp(-7.0, 7.0)
            y = torch.addmm(self.b2[j], a * torch.sigmoid(1.702 * a) * (b + 1), self.w2[j].t())
            out.index_add_(0, token, y * weights[token, slot, None])
        return out

    def flops(self, d):
        e, two_f, _ = self.w1.shape
        return 2 * d * e + self.top_k * (2 * d * two_f + 2 * (two_f // 2) * d)


class ProductKey(torch.nn.Module):
    """sgatlin (arXiv:2606.07414 Eqs. 1-2: product-key routing over C channels of n^2 rank-one
    neurons, raw scores as gates) and PEER (He 2024: per-channel query heads, GELU neurons,
    softmax over the chosen scores), by embedding gathers as PEER's public code does."""

    def __init__(self, d, d_ffn, channels, top_k, d_key, peer):
        super().__init__()
        self.n = math.isqrt(d_ffn)
        self.top_k, self.channels, self.d_ffn, self.d_key, self.peer = top_k, channels, d_ffn, d_key, peer
        if peer:
            self.query = normal(2, channels, d, d_key, std=1 / math.sqrt(d))
            self.keys = normal(2, channels, self.n, d_key, std=1.0)
        else:
            self.query = normal(d_key, d, std=1 / math.sqrt(d))
            self.keys = normal(2 * channels * self.n, d_key, std=1 / math.sqrt(d_key))
        rows = d_ffn if peer else channels * d_ffn
        self.experts_in = normal(rows, d, std=1 / math.sqrt(d_ffn))
        self.experts_out = normal(rows, d, std=1 / math.sqrt(d_ffn))
        self.auxiliary = None

    def forward(self, z):
        tokens, c, k, n = z.shape[0], self.channels, self.top_k, self.n
        if self.peer:
            q = torch.einsum("nd,pcde->npce", z, self.query)
            s = torch.einsum("npce,pcje->npcj", q, self.keys) / math.sqrt(2 * self.d_key)
        else:
            s = ((z @ self.query.t()) @ self.keys.t()).view(tokens, 2, c, n)
        s1, s2 = s[:, 0], s[:, 1]
        with torch.no_grad():
            i1, i2 = s1.topk(k, -1).indices, s2.topk(k, -1).indices
        candidates = (s1.gather(-1, i1)[..., :, None] + s2.gather(-1, i2)[..., None, :]).flatten(-2)
        ids = (i1[..., :, None] * n + i2[..., None, :]).flatten(-2)
        with torch.no_grad():
            best = candidates.topk(k, -1).indices
        scores, rows = candidates.gather(-1, best), ids.gather(-1, best)  # (N, C, k)
        if not self.peer:
            rows = rows + torch.arange(c).view(1, c, 1) * self.d_ffn
        rows = rows.reshape(tokens, c * k)
        h = torch.einsum("nd,nkd->nk", z, F.embedding(rows, self.experts_in))
        if self.peer:
            h = F.gelu(h) * scores.softmax(-1).reshape(tokens, c * k)
        else:
            h = h * scores.reshape(tokens, c * k)
        return torch.einsum("nk,nkd->nd", h, F.embedding(rows, self.experts_out))

    def flops(self, d):
        c, dk, n = self.channels, self.d_key, self.n
        experts = 2 * 2 * self.top_k * c * d
        router = 2 * 2 * c * dk * d if self.peer else 2 * dk * d
        return router + 2 * 2 * c * n * dk + experts


class MohdSwiGlu(torch.nn.Module):
    """MoHD's FFN (arXiv:2412.05644 Eqs. 14-16): N sub-dimensions, S shared of K active, router
    weights renormalised to sum K, applied to the input rows and output columns; fusion matrix."""

    def __init__(self, d, d_ffn, sub_dims, active, layers):
        super().__init__()
        self.sub_dims, self.active, self.shared = sub_dims, active, max(0, active - 1)
        self.router = normal(d, sub_dims, std=0.02)
        self.fusion = torch.nn.Parameter(torch.eye(sub_dims))
        self.w_gate = normal(d, d_ffn, std=0.02)
        self.w_up = normal(d, d_ffn, std=0.02)
        self.w_down = normal(d_ffn, d, std=0.02 / math.sqrt(2 * layers))
        self.auxiliary = None

    def forward(self, x):
        tokens, d = x.shape
        n, shared, routed = self.sub_dims, self.shared, self.active - self.shared
        logits = x @ self.router
        s = logits.softmax(-1)
        mask = torch.zeros_like(s)
        with torch.no_grad():
            mask[:, :shared] = 1
            mask.scatter_(1, s[:, shared:].topk(routed, -1).indices + shared, 1.0)
        g = s * mask
        w = (self.active / g.sum(-1, keepdim=True) * g).repeat_interleave(d // n, -1)
        p = logits[:, shared:].softmax(-1)  # Load balance over the specialised sub-dims, beta = 0.01.
        f = mask[:, shared:].sum(0) * ((n - shared) / (routed * tokens))
        self.auxiliary = 0.01 * (f * p.mean(0)).sum()
        scaled = x * w
        y = (F.silu(scaled @ self.w_gate) * (scaled @ self.w_up)) @ self.w_down * w
        return torch.einsum("ij,tjd->tid", self.fusion, y.view(tokens, n, -1)).reshape(tokens, d)

    def flops(self, d):
        active_width = self.active * (d // self.sub_dims)
        return 6 * active_width * self.w_gate.shape[1] + 2 * d * self.sub_dims + 2 * self.sub_dims * active_width


def make_ffn(name, d, d_ffn, experts, top_k, d_key, layers):
    """The FFN the registry name gives in layers/ffn (None: the dense GELU MLP of the Block)."""
    if name == "gelu_mlp":
        return None
    if name in ("switch", "moe_x"):
        return Mixture(d, d_ffn, experts, top_k, layers, sparsity_router=name == "moe_x")
    if name == "gpt_oss_moe":
        return GptOssMoe(d, d_ffn, experts, top_k)
    if name in ("sgatlin", "peer"):
        return ProductKey(d, d_ffn, experts, top_k, d_key, peer=name == "peer")
    if name == "mohd_swiglu":
        return MohdSwiGlu(d, d_ffn, experts, top_k, layers)
    raise ValueError(f"no eager reference for ffn {name}")
