"""Reference parity of //models/tools:hf_forward on nanoGPT ckpt.pt files.

The model below is written here from the architecture of Karpathy's nanoGPT
(model.py): GPT-2 with nn.Linear projections (weights [out, in]), learned
positions, pre-LN blocks whose LayerNorms and Linears carry biases only when
`bias`, exact GELU, a fused c_attn [q | k | v], a final LayerNorm and an
lm_head tied to wte. Without a fused attention kernel (torch < 2.0) it keeps
the causal mask as the buffer `attn.bias`, as nanoGPT does.

Each variant trains a tiny random model for one AdamW step (nanoGPT's two
parameter groups), saves ckpt.pt as train.py does (model, optimizer,
model_args, iter_num, best_val_loss, config) in torch's zip format, with the
`_orig_mod.` prefix torch.compile adds in one variant and storages tagged
cuda:0 (a checkpoint saved on a GPU) in one, then compares hf_forward's logits
and hook activations with the reference's in float32 (max abs difference <=
1e-5) at the hook points hf_parity_test.py compares.

Usage: nanogpt_parity_test.py HF_FORWARD
       nanogpt_parity_test.py --write DIR  (the variants' ckpt<i>.pt and a
       chess meta.pkl, for trying the loader by hand)
"""

import math
import os
import pickle
import sys
import tempfile

import torch
from torch import nn
from torch.nn import functional as F

# The HF parity test's hook points and comparison (same directory).
from hf_parity_test import check_against_hf_forward

# Ids below the chess vocabulary's 32.
TOKENS = [[3, 17, 0, 31, 9, 9, 30], [25, 1, 8, 22, 13, 5, 2]]
# Karvonen's chess vocabulary (chess_llm_interpretability's meta.pkl).
CHESS_CHARS = " #+-.0123456789;=BKNOQRabcdefghx"

# --- the model, from nanoGPT's architecture.


class LayerNorm(nn.Module):
  """LayerNorm with an optional bias (eps 1e-5)."""

  def __init__(self, width, bias):
    super().__init__()
    self.weight = nn.Parameter(torch.ones(width))
    self.bias = nn.Parameter(torch.zeros(width)) if bias else None

  def forward(self, x):
    return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):

  def __init__(self, args):
    super().__init__()
    d, self.n_head = args["n_embd"], args["n_head"]
    self.c_attn = nn.Linear(d, 3 * d, bias=args["bias"])
    self.c_proj = nn.Linear(d, d, bias=args["bias"])
    block = args["block_size"]
    self.register_buffer(
        "bias",
        torch.tril(torch.ones(block, block)).view(1, 1, block, block))

  def forward(self, x, hooks, i):
    b, t, d = x.shape
    q, k, v = self.c_attn(x).split(d, dim=2)
    q, k, v = (z.view(b, t, self.n_head, d // self.n_head).transpose(1, 2)
               for z in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
    scores = scores.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
    pattern = F.softmax(scores, dim=-1)
    hooks[f"blocks.{i}.attn.hook_pattern"] = pattern
    y = (pattern @ v).transpose(1, 2).contiguous().view(b, t, d)
    return self.c_proj(y)


class MLP(nn.Module):

  def __init__(self, args):
    super().__init__()
    d = args["n_embd"]
    self.c_fc = nn.Linear(d, 4 * d, bias=args["bias"])
    self.gelu = nn.GELU()
    self.c_proj = nn.Linear(4 * d, d, bias=args["bias"])

  def forward(self, x, hooks, i):
    hidden = self.gelu(self.c_fc(x))
    hooks[f"blocks.{i}.ffn.hook_hidden"] = hidden
    return self.c_proj(hidden)


class Block(nn.Module):

  def __init__(self, args):
    super().__init__()
    self.ln_1 = LayerNorm(args["n_embd"], args["bias"])
    self.attn = CausalSelfAttention(args)
    self.ln_2 = LayerNorm(args["n_embd"], args["bias"])
    self.mlp = MLP(args)

  def forward(self, x, hooks, i):
    attn_out = self.attn(self.ln_1(x), hooks, i)
    hooks[f"blocks.{i}.attn.hook_out"] = attn_out
    x = x + attn_out
    hooks[f"blocks.{i}.hook_resid_mid"] = x
    x = x + self.mlp(self.ln_2(x), hooks, i)
    hooks[f"blocks.{i}.hook_resid_post"] = x
    return x


class GPT(nn.Module):

  def __init__(self, args):
    super().__init__()
    d = args["n_embd"]
    self.transformer = nn.ModuleDict(
        dict(wte=nn.Embedding(args["vocab_size"], d),
             wpe=nn.Embedding(args["block_size"], d),
             h=nn.ModuleList([Block(args) for _ in range(args["n_layer"])]),
             ln_f=LayerNorm(d, args["bias"])))
    self.lm_head = nn.Linear(d, args["vocab_size"], bias=False)
    self.transformer.wte.weight = self.lm_head.weight

  def forward(self, ids):
    """Logits at every position (nanoGPT's inference path keeps only the
    last) and the hook activations."""
    hooks = {}
    positions = torch.arange(ids.shape[1])
    x = self.transformer.wte(ids) + self.transformer.wpe(positions)
    hooks["hook_embed"] = x
    for i, block in enumerate(self.transformer.h):
      x = block(x, hooks, i)
    x = self.transformer.ln_f(x)
    hooks["hook_final"] = x
    return self.lm_head(x), hooks


# --- the checkpoint, as train.py writes it.


def optimizer_for(model):
  """train.py's AdamW: weight decay on the matrices only."""
  params = [p for p in model.parameters() if p.requires_grad]
  return torch.optim.AdamW([
      {"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
      {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
  ], lr=1e-2, betas=(0.9, 0.95))


def make_model(args, seed):
  torch.manual_seed(seed)
  model = GPT(args)
  with torch.no_grad():
    for name, p in model.named_parameters():
      if name.endswith("ln_1.weight") or name.endswith(
          "ln_2.weight") or name.endswith("ln_f.weight"):
        p.copy_(1 + 0.1 * torch.randn_like(p))
      elif p.dim() == 1:
        p.copy_(0.1 * torch.randn_like(p))
      elif "wte" in name or "wpe" in name:
        p.copy_(0.3 * torch.randn_like(p))
      else:
        p.copy_(torch.randn_like(p) / math.sqrt(p.shape[1]))
  optimizer = optimizer_for(model)
  ids = torch.tensor(TOKENS)
  logits, _ = model(ids[:, :-1])
  F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                  ids[:, 1:].reshape(-1)).backward()
  optimizer.step()
  optimizer.zero_grad(set_to_none=True)
  return model.eval(), optimizer


def save_checkpoint(path, model, optimizer, args, prefix, location):
  state = model.state_dict()
  if prefix:
    state = type(state)((prefix + k, v) for k, v in state.items())
  checkpoint = {
      "model": state,
      "optimizer": optimizer.state_dict(),
      "model_args": args,
      "iter_num": 1,
      "best_val_loss": torch.tensor(3.25),
      "config": {
          "out_dir": "out-chess", "eval_interval": 4000, "always_save_checkpoint":
          True, "init_from": "scratch", "dataset": "lichess_hf_dataset",
          "gradient_accumulation_steps": 1, "batch_size": 100, "learning_rate":
          3e-4, "betas": None, "decay_lr": True, "compile": bool(prefix),
          "dtype": "bfloat16", "n_layer": args["n_layer"]
      },
  }
  if location:
    # As saved from a GPU: the zip's storages are tagged with the device.
    original = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: location
    try:
      torch.save(checkpoint, path)
    finally:
      torch.serialization.location_tag = original
  else:
    torch.save(checkpoint, path)


def write_meta(path):
  with open(path, "wb") as f:
    pickle.dump({
        "vocab_size": len(CHESS_CHARS),
        "itos": dict(enumerate(CHESS_CHARS)),
        "stoi": {c: i for i, c in enumerate(CHESS_CHARS)}
    }, f)


ARGS = {
    "n_layer": 2, "n_head": 4, "n_embd": 32, "block_size": 16, "bias": True,
    "vocab_size": 32, "dropout": 0.0
}
# (name, model_args, state dict prefix, storage location tag).
VARIANTS = [
    ("bias, plain names, mask buffers", ARGS, "", None),
    ("bias=False, _orig_mod. names, cuda:0 storages, 3 layers, 2 heads",
     dict(ARGS, bias=False, n_layer=3, n_head=2,
          block_size=1023), "_orig_mod.", "cuda:0"),
]


def run_variant(binary, name, args, prefix, location, seed, tmp):
  model, optimizer = make_model(args, seed)
  path = os.path.join(tmp, "ckpt.pt")
  save_checkpoint(path, model, optimizer, args, prefix, location)
  return check_against_hf_forward(binary, path, tmp, model,
                                  f"nanogpt [{name}]", TOKENS)


def main():
  torch.set_num_threads(1)
  if sys.argv[1] == "--write":
    for seed, (name, args, prefix, location) in enumerate(VARIANTS):
      model, optimizer = make_model(args, seed)
      save_checkpoint(os.path.join(sys.argv[2], f"ckpt{seed}.pt"), model,
                      optimizer, args, prefix, location)
    write_meta(os.path.join(sys.argv[2], "meta.pkl"))
    return
  ok = True
  for seed, variant in enumerate(VARIANTS):
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as tmp:
      ok = run_variant(sys.argv[1], *variant, seed, tmp) and ok
  sys.exit(0 if ok else 1)


if __name__ == "__main__":
  main()
