"""The same GPT and training step in PyTorch eager (Debian python3-torch 1.13), for
training_throughput's comparison: token + learned position embedding, pre-LayerNorm blocks,
causal attention, GELU MLP (or a sparse FFN of pytorch_eager_ffns.py, --ffn), tied unembedding,
no biases, AdamW, gradient clipping."""
import argparse
import math
import time

import torch
import torch.nn.functional as F

from pytorch_eager_ffns import make_ffn


class Block(torch.nn.Module):
    def __init__(self, d, heads, layers, ffn):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.out = torch.nn.Linear(d, d, bias=False)
        self.ln2 = torch.nn.LayerNorm(d)
        self.ffn = ffn(d, layers)
        if self.ffn is None:
            self.fc_in = torch.nn.Linear(d, 4 * d, bias=False)
            self.fc_out = torch.nn.Linear(4 * d, d, bias=False)
        self.register_buffer("mask", torch.full((256, 256), float("-inf")).triu(1))
        # The scales of layers/attention/causal_attention.cc and layers/ffn/dense_mlp.cc.
        out_std = 0.02 / math.sqrt(2 * layers)
        scaled = [(self.qkv, 0.02), (self.out, out_std)]
        if self.ffn is None:
            scaled += [(self.fc_in, 0.02), (self.fc_out, out_std)]
        for linear, std in scaled:
            torch.nn.init.normal_(linear.weight, 0.0, std)

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads) + self.mask[:t, :t]
        mixed = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.out(mixed)
        if self.ffn is None:
            return x + self.fc_out(F.gelu(self.fc_in(self.ln2(x))))
        return x + self.ffn(self.ln2(x).reshape(b * t, d)).view(b, t, d)


class Gpt(torch.nn.Module):
    def __init__(self, vocab, d, layers, ffn):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, d)
        self.wpe = torch.nn.Embedding(256, d)
        self.blocks = torch.nn.ModuleList([Block(d, d // 32, layers, ffn) for _ in range(layers)])
        self.ln_f = torch.nn.LayerNorm(d)
        # models/gpt.cc's scales. PyTorch's default N(0, 1) gives logits of std ~sqrt(d), a softmax whose
        # gradient is partly subnormal, and subnormal sgemm operands are slow on Intel cores.
        torch.nn.init.normal_(self.wte.weight, 0.0, 0.02)
        torch.nn.init.normal_(self.wpe.weight, 0.0, 0.01)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe.weight[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


def forward_flops_per_token(model, d, layers, vocab=8192, t=256):
    ffn = model.blocks[0].ffn
    ffn_flops = 2 * 2 * d * 4 * d if ffn is None else ffn.flops(d)  # Active FLOPs of a sparse FFN.
    return 2 * d * vocab + layers * (2 * 4 * d * d + 2 * 2 * t * d + ffn_flops)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--ffn", default="gelu_mlp")
    parser.add_argument("--d_ffn", type=int, default=0, help="0: 4 d_model")
    parser.add_argument("--n_experts", type=int, default=0)
    parser.add_argument("--top_k", type=int, default=0)
    parser.add_argument("--d_key", type=int, default=0, help="0: 128")
    args = parser.parse_args()
    steps, batch = args.steps, args.batch_size
    torch.set_num_threads(2)
    torch.manual_seed(0)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    for _ in range(3):
        a @ b
    start = time.perf_counter()
    for _ in range(30):
        a @ b
    peak = 2 * 1024**3 * 30 / (time.perf_counter() - start) / 1e9
    for d, layers in [(128, 4), (256, 6)]:
        def ffn(width, depth):
            return make_ffn(args.ffn, width, args.d_ffn or 4 * width, args.n_experts, args.top_k,
                            args.d_key or 128, depth)

        model = Gpt(8192, d, layers, ffn)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
        tokens = torch.randint(0, 8192, (batch, 256))
        targets = torch.randint(0, 8192, (batch, 256))

        def step():
            optimizer.zero_grad()
            loss = F.cross_entropy(model(tokens).view(-1, 8192), targets.view(-1))
            for block in model.blocks:
                if block.ffn is not None and block.ffn.auxiliary is not None:
                    loss = loss + block.ffn.auxiliary
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            return loss.item()

        # The first step's loss, before any update: checked against training_throughput's.
        initial_loss = step()
        for _ in range(2):
            step()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        rate = steps * batch * 256 / (time.perf_counter() - start)
        gflops = 3 * forward_flops_per_token(model, d, layers) * rate / 1e9
        name = "" if args.ffn == "gelu_mlp" else " " + args.ffn
        print(f"pytorch-eager d={d} L={layers} T=256 V=8192 B={batch}{name}: {rate:.0f} tokens/s, "
              f"{gflops:.1f} GFLOP/s, MFU {100 * gflops / peak:.1f}% of {peak:.0f} GFLOP/s, "
              f"initial loss {initial_loss:.4f}")


if __name__ == "__main__":
    main()
