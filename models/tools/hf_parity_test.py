"""Reference parity of //models/tools:hf_forward against PyTorch models written
here from each architecture's published definition (not from any library's
modeling code): GPT-2 (Radford et al. 2019), GPT-NeoX (Black et al. 2022,
arXiv:2204.06745) and Llama (Touvron et al. 2023, arXiv:2302.13971; Llama 3,
arXiv:2407.21783).

For each variant of the architecture: write a tiny random checkpoint in the
Hugging Face layout (config.json + model.safetensors, written with struct and
json), run hf_forward on it, and compare its logits and hook activations with
the reference's in float32 (max abs difference <= 1e-5).

Usage: hf_parity_test.py HF_FORWARD {gpt2,gpt_neox,llama}
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import torch

TOLERANCE = 1e-5
TOKENS = [[3, 17, 0, 42, 9, 9, 31], [50, 1, 8, 22, 63, 5, 2]]
VOCAB = 64
D_MODEL = 32
LAYERS = 2
HEADS = 4
CONTEXT = 16
HOOKS = [
    "hook_embed", "blocks.0.attn.hook_pattern", "blocks.0.attn.hook_out",
    "blocks.0.hook_resid_mid", "blocks.0.ffn.hook_hidden",
    "blocks.0.hook_resid_post", "blocks.1.hook_resid_post", "hook_final"
]
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}

# --- safetensors, from the format's definition: u64 header length, JSON
# header, little-endian row-major data.


def write_safetensors(path, tensors, dtype):
  """Writes `tensors` stored as `dtype`; returns them as float32 again, as
  rounded to that dtype (what the reader must see)."""
  header, blobs, offset, stored = {}, [], 0, {}
  for name in sorted(tensors):
    t = tensors[name].to(DTYPES[dtype]).contiguous()
    stored[name] = t.float()
    data = t.view(torch.int16 if dtype != "F32" else torch.int32).numpy()
    data = data.astype(data.dtype.newbyteorder("<")).tobytes()
    header[name] = {
        "dtype": dtype,
        "shape": list(t.shape),
        "data_offsets": [offset, offset + len(data)]
    }
    blobs.append(data)
    offset += len(data)
  text = json.dumps(header, separators=(",", ":")).encode()
  text += b" " * (-len(text) % 8)
  with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for blob in blobs:
      f.write(blob)
  return stored


def read_safetensors(path):
  with open(path, "rb") as f:
    data = f.read()
  (length,) = struct.unpack("<Q", data[:8])
  header = json.loads(data[8:8 + length])
  out = {}
  for name, entry in header.items():
    if name == "__metadata__":
      continue
    assert entry["dtype"] == "F32", entry
    begin, end = entry["data_offsets"]
    raw = bytearray(data[8 + length + begin:8 + length + end])
    out[name] = torch.frombuffer(raw, dtype=torch.float32).reshape(
        entry["shape"])
  return out


# --- shared pieces of the definitions.


def layer_norm(x, weight, bias, eps):
  mean = x.mean(-1, keepdim=True)
  var = ((x - mean)**2).mean(-1, keepdim=True)
  return (x - mean) / torch.sqrt(var + eps) * weight + bias


def rms_norm(x, weight, eps):
  return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def gelu_exact(x):
  return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def gelu_tanh(x):
  return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) *
                                   (x + 0.044715 * x**3)))


def causal_attention(q, k, v):
  """q, k, v: (B, H, T, Dh) -> mixed (B, T, H Dh), pattern (B, H, T, T)."""
  t = q.shape[2]
  scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
  future = torch.ones(t, t, dtype=torch.bool).triu(1)
  pattern = torch.softmax(scores.masked_fill(future, float("-inf")), -1)
  mixed = (pattern @ v).transpose(1, 2)
  return mixed.reshape(mixed.shape[0], t, -1), pattern


def heads(x, n):
  """(B, T, n Dh) -> (B, n, T, Dh)."""
  b, t, width = x.shape
  return x.view(b, t, n, width // n).transpose(1, 2)


def rotate(x, inverse_frequency):
  """Rotary positions (Su et al. 2021) on pairs (i, i + r/2) of the leading r
  = 2 len(inverse_frequency) dims of each head (GPT-NeoX's and Llama's
  layout); the rest pass through."""
  r = 2 * inverse_frequency.numel()
  positions = torch.arange(x.shape[-2], dtype=torch.float64)
  angles = torch.outer(positions, inverse_frequency.double())
  cos = torch.cat([angles, angles], -1).cos().float()
  sin = torch.cat([angles, angles], -1).sin().float()
  turned, passed = x[..., :r], x[..., r:]
  half = r // 2
  swapped = torch.cat([-turned[..., half:], turned[..., :half]], -1)
  return torch.cat([turned * cos + swapped * sin, passed], -1)


def inverse_frequencies(dims, base):
  return 1.0 / base**(torch.arange(0, dims, 2, dtype=torch.float64) / dims)


def llama3_rescaled(frequency, factor, low, high, old_context):
  """Llama 3.1's long-context rescaling (arXiv:2407.21783), per frequency:
  short wavelengths kept, long ones divided by factor, smooth between."""
  out = []
  for f in frequency.tolist():
    wavelength = 2 * math.pi / f
    if wavelength < old_context / high:
      out.append(f)
    elif wavelength > old_context / low:
      out.append(f / factor)
    else:
      smooth = (old_context / wavelength - low) / (high - low)
      out.append((1 - smooth) * f / factor + smooth * f)
  return torch.tensor(out, dtype=torch.float64)


# --- GPT-2: learned positions, pre-LN blocks, Conv1D (x W + b, W [in, out]),
# fused c_attn [q | k | v], GELU (tanh), final LN, tied unembedding.


def gpt2_weights(cfg, g, tied):
  d, f, v, p = cfg["n_embd"], cfg["n_inner"] or 4 * cfg["n_embd"], cfg[
      "vocab_size"], cfg["n_positions"]
  w = {"wte.weight": randn(g, v, d, 0.3), "wpe.weight": randn(g, p, d, 0.1)}
  for i in range(cfg["n_layer"]):
    h = f"h.{i}."
    w.update(norm_weights(g, h + "ln_1", d))
    w.update(norm_weights(g, h + "ln_2", d))
    for name, shape in [("attn.c_attn", (d, 3 * d)), ("attn.c_proj", (d, d)),
                        ("mlp.c_fc", (d, f)), ("mlp.c_proj", (f, d))]:
      w[h + name + ".weight"] = randn(g, *shape, 1 / math.sqrt(shape[0]))
      w[h + name + ".bias"] = randn(g, shape[1], 0.1)
  w.update(norm_weights(g, "ln_f", d))
  if not tied:
    w["lm_head.weight"] = randn(g, v, d, 0.3)
  return w


def gpt2_forward(w, cfg, ids):
  eps, n, act = cfg["layer_norm_epsilon"], cfg["n_head"], {
      "gelu_new": gelu_tanh,
      "gelu": gelu_exact
  }[cfg["activation_function"]]
  conv1d = lambda x, name: x @ w[name + ".weight"] + w[name + ".bias"]
  hooks = {}
  x = w["wte.weight"][ids] + w["wpe.weight"][:ids.shape[1]]
  hooks["hook_embed"] = x
  for i in range(cfg["n_layer"]):
    h = f"h.{i}."
    a = layer_norm(x, w[h + "ln_1.weight"], w[h + "ln_1.bias"], eps)
    q, k, v = conv1d(a, h + "attn.c_attn").split(cfg["n_embd"], -1)
    mixed, pattern = causal_attention(heads(q, n), heads(k, n), heads(v, n))
    attn_out = conv1d(mixed, h + "attn.c_proj")
    x = x + attn_out
    hooks[f"blocks.{i}.attn.hook_pattern"] = pattern
    hooks[f"blocks.{i}.attn.hook_out"] = attn_out
    hooks[f"blocks.{i}.hook_resid_mid"] = x
    m = layer_norm(x, w[h + "ln_2.weight"], w[h + "ln_2.bias"], eps)
    hidden = act(conv1d(m, h + "mlp.c_fc"))
    hooks[f"blocks.{i}.ffn.hook_hidden"] = hidden
    x = x + conv1d(hidden, h + "mlp.c_proj")
    hooks[f"blocks.{i}.hook_resid_post"] = x
  x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"], eps)
  hooks["hook_final"] = x
  tied = cfg.get("tie_word_embeddings", True)
  return x @ w["wte.weight" if tied else "lm_head.weight"].T, hooks


# --- GPT-NeoX: rotary on the leading rotary_pct of each head, fused
# query_key_value per head [q, k, v], parallel (or sequential) residual, exact
# GELU, biases, untied embed_out.


def neox_weights(cfg, g, tied):
  d, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
  w = {"embed_in.weight": randn(g, v, d, 0.3)}
  for i in range(cfg["num_hidden_layers"]):
    p = f"layers.{i}."
    w.update(norm_weights(g, p + "input_layernorm", d))
    w.update(norm_weights(g, p + "post_attention_layernorm", d))
    for name, (out, inp) in [("attention.query_key_value", (3 * d, d)),
                             ("attention.dense", (d, d)),
                             ("mlp.dense_h_to_4h", (f, d)),
                             ("mlp.dense_4h_to_h", (d, f))]:
      w[p + name + ".weight"] = randn(g, out, inp, 1 / math.sqrt(inp))
      w[p + name + ".bias"] = randn(g, out, 0.1)
  w.update(norm_weights(g, "final_layer_norm", d))
  if not tied:
    w["embed_out.weight"] = randn(g, v, d, 0.3)
  return w


def neox_forward(w, cfg, ids):
  eps, n, d = cfg["layer_norm_eps"], cfg["num_attention_heads"], cfg[
      "hidden_size"]
  dh = d // n
  base = cfg.get("rope_theta", cfg.get("rotary_emb_base", 10000))
  frequency = inverse_frequencies(int(dh * cfg["rotary_pct"]), base)
  linear = lambda x, name: x @ w[name + ".weight"].T + w[name + ".bias"]
  hooks = {}
  x = w["embed_in.weight"][ids]
  hooks["hook_embed"] = x
  for i in range(cfg["num_hidden_layers"]):
    p = f"layers.{i}."
    a = layer_norm(x, w[p + "input_layernorm.weight"],
                   w[p + "input_layernorm.bias"], eps)
    qkv = heads(linear(a, p + "attention.query_key_value"), n)  # (B,H,T,3Dh)
    q, k, v = qkv[..., :dh], qkv[..., dh:2 * dh], qkv[..., 2 * dh:]
    mixed, pattern = causal_attention(rotate(q, frequency),
                                      rotate(k, frequency), v)
    attn_out = linear(mixed, p + "attention.dense")
    hooks[f"blocks.{i}.attn.hook_pattern"] = pattern
    hooks[f"blocks.{i}.attn.hook_out"] = attn_out
    hooks[f"blocks.{i}.hook_resid_mid"] = x + attn_out
    mlp_in = x if cfg["use_parallel_residual"] else x + attn_out
    m = layer_norm(mlp_in, w[p + "post_attention_layernorm.weight"],
                   w[p + "post_attention_layernorm.bias"], eps)
    hidden = gelu_exact(linear(m, p + "mlp.dense_h_to_4h"))
    hooks[f"blocks.{i}.ffn.hook_hidden"] = hidden
    x = x + attn_out + linear(hidden, p + "mlp.dense_4h_to_h")
    hooks[f"blocks.{i}.hook_resid_post"] = x
  x = layer_norm(x, w["final_layer_norm.weight"], w["final_layer_norm.bias"],
                 eps)
  hooks["hook_final"] = x
  tied = cfg.get("tie_word_embeddings", False)
  return x @ w["embed_in.weight" if tied else "embed_out.weight"].T, hooks


# --- Llama: RMSNorm, rotary (rope_theta, llama3 rescaling), grouped-query
# attention, SwiGLU, no biases, untied (or tied) lm_head.


def llama_weights(cfg, g, tied):
  d, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
  kv = cfg["num_key_value_heads"] * d // cfg["num_attention_heads"]
  w = {"embed_tokens.weight": randn(g, v, d, 0.3)}
  for i in range(cfg["num_hidden_layers"]):
    p = f"layers.{i}."
    for norm in ["input_layernorm", "post_attention_layernorm"]:
      w[p + norm + ".weight"] = 1 + randn(g, d, 0.1)
    for name, (out, inp) in [("self_attn.q_proj", (d, d)),
                             ("self_attn.k_proj", (kv, d)),
                             ("self_attn.v_proj", (kv, d)),
                             ("self_attn.o_proj", (d, d)),
                             ("mlp.gate_proj", (f, d)), ("mlp.up_proj", (f, d)),
                             ("mlp.down_proj", (d, f))]:
      w[p + name + ".weight"] = randn(g, out, inp, 1 / math.sqrt(inp))
  w["norm.weight"] = 1 + randn(g, d, 0.1)
  if not tied:
    w["lm_head.weight"] = randn(g, v, d, 0.3)
  return w


def llama_forward(w, cfg, ids):
  eps, n, nkv, d = cfg["rms_norm_eps"], cfg["num_attention_heads"], cfg[
      "num_key_value_heads"], cfg["hidden_size"]
  frequency = inverse_frequencies(d // n, cfg["rope_theta"])
  scaling = cfg.get("rope_scaling")
  if scaling:
    frequency = llama3_rescaled(frequency, scaling["factor"],
                                scaling["low_freq_factor"],
                                scaling["high_freq_factor"],
                                scaling["original_max_position_embeddings"])
  linear = lambda x, name: x @ w[name + ".weight"].T
  hooks = {}
  x = w["embed_tokens.weight"][ids]
  hooks["hook_embed"] = x
  for i in range(cfg["num_hidden_layers"]):
    p = f"layers.{i}."
    a = rms_norm(x, w[p + "input_layernorm.weight"], eps)
    q = rotate(heads(linear(a, p + "self_attn.q_proj"), n), frequency)
    k = rotate(heads(linear(a, p + "self_attn.k_proj"), nkv), frequency)
    v = heads(linear(a, p + "self_attn.v_proj"), nkv)
    # Query head h reads key/value head h // (n / nkv).
    group = [h * nkv // n for h in range(n)]
    mixed, pattern = causal_attention(q, k[:, group], v[:, group])
    attn_out = linear(mixed, p + "self_attn.o_proj")
    x = x + attn_out
    hooks[f"blocks.{i}.attn.hook_pattern"] = pattern
    hooks[f"blocks.{i}.attn.hook_out"] = attn_out
    hooks[f"blocks.{i}.hook_resid_mid"] = x
    m = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
    hidden = torch.nn.functional.silu(linear(m, p + "mlp.gate_proj")) * linear(
        m, p + "mlp.up_proj")
    hooks[f"blocks.{i}.ffn.hook_hidden"] = hidden
    x = x + linear(hidden, p + "mlp.down_proj")
    hooks[f"blocks.{i}.hook_resid_post"] = x
  x = rms_norm(x, w["norm.weight"], eps)
  hooks["hook_final"] = x
  tied = cfg.get("tie_word_embeddings", False)
  return x @ w["embed_tokens.weight" if tied else "lm_head.weight"].T, hooks


# --- the variants each test runs.


def randn(g, *shape_and_std):
  if isinstance(shape_and_std[-1], float):
    *shape, std = shape_and_std
  else:
    shape, std = shape_and_std, 1.0
  return torch.randn(*shape, generator=g) * std


def norm_weights(g, name, d):
  return {
      name + ".weight": 1 + randn(g, d, 0.1),
      name + ".bias": randn(g, d, 0.1)
  }


GPT2 = {
    "model_type": "gpt2", "vocab_size": VOCAB, "n_positions": CONTEXT,
    "n_embd": D_MODEL, "n_layer": LAYERS, "n_head": HEADS, "n_inner": None,
    "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5
}
NEOX = {
    "model_type": "gpt_neox", "vocab_size": VOCAB, "hidden_size": D_MODEL,
    "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
    "intermediate_size": 3 * D_MODEL, "max_position_embeddings": CONTEXT,
    "rotary_pct": 0.25, "rotary_emb_base": 10000, "layer_norm_eps": 1e-5,
    "use_parallel_residual": True, "hidden_act": "gelu",
    "tie_word_embeddings": False
}
LLAMA = {
    "model_type": "llama", "vocab_size": VOCAB, "hidden_size": D_MODEL,
    "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
    "num_key_value_heads": 2, "intermediate_size": 80,
    "max_position_embeddings": CONTEXT, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False,
    "rope_scaling": {
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 64
    }
}

# (name, config, prefix, dtype, extra buffers in the file).
VARIANTS = {
    "gpt2": (gpt2_weights, gpt2_forward, [
        ("transformer. names, attention mask buffers", GPT2, "transformer.",
         "F32", ["h.0.attn.bias", "h.1.attn.masked_bias"]),
        ("bare names, F16, n_inner 48, exact GELU, untied lm_head",
         dict(GPT2, n_inner=48, activation_function="gelu",
              tie_word_embeddings=False), "", "F16", []),
    ]),
    "gpt_neox": (neox_weights, neox_forward, [
        ("gpt_neox. names, parallel residual, rotary_pct 0.25, buffers", NEOX,
         "gpt_neox.", "F32",
         ["layers.0.attention.bias", "layers.0.attention.masked_bias",
          "layers.1.attention.rotary_emb.inv_freq"]),
        ("bare names, BF16, sequential residual, rotary_pct 0.5, base 500",
         dict(NEOX, use_parallel_residual=False, rotary_pct=0.5,
              rotary_emb_base=500), "", "BF16", []),
    ]),
    "llama": (llama_weights, llama_forward, [
        ("model. names, GQA 4/2, llama3 rope scaling, untied", LLAMA, "model.",
         "F32", ["layers.0.self_attn.rotary_emb.inv_freq"]),
        ("bare names, BF16, MHA, rope_theta 500000, tied, eps 1e-6",
         dict(LLAMA, num_key_value_heads=HEADS, rope_scaling=None,
              rope_theta=500000.0, tie_word_embeddings=True,
              rms_norm_eps=1e-6), "", "BF16", []),
    ]),
}
# Names outside the prefix (the causal-LM head).
TOP_LEVEL = {"lm_head.weight", "embed_out.weight"}


def run_variant(binary, weights_fn, forward_fn, name, cfg, prefix, dtype,
                buffers, seed, tmp):
  g = torch.Generator().manual_seed(seed)
  tied = cfg.get("tie_word_embeddings", cfg["model_type"] == "gpt2")
  weights = weights_fn(cfg, g, tied)
  for buffer in buffers:
    weights[buffer] = torch.ones(2, 2)
  named = {(k if k in TOP_LEVEL else prefix + k): t for k, t in weights.items()}
  stored = write_safetensors(os.path.join(tmp, "model.safetensors"), named,
                             dtype)
  weights = {k: stored[k if k in TOP_LEVEL else prefix + k] for k in weights}
  with open(os.path.join(tmp, "config.json"), "w") as f:
    json.dump(cfg, f, indent=2)
  return check_against_hf_forward(
      binary, tmp, tmp, lambda ids: forward_fn(weights, cfg, ids),
      f"{cfg['model_type']} [{name}]")


def check_against_hf_forward(binary, checkpoint, tmp, reference, label,
                             tokens=TOKENS):
  """Runs hf_forward on `checkpoint` and compares its logits and HOOKS with
  reference(ids) -> (logits, hooks) in float32; prints a PASS or FAIL line
  with each max abs difference and returns whether all are <= TOLERANCE."""
  out = os.path.join(tmp, "out.safetensors")
  subprocess.run([
      binary, "--checkpoint=" + checkpoint,
      "--tokens=" + ";".join(",".join(map(str, row)) for row in tokens),
      "--hooks=" + ",".join(HOOKS), "--out=" + out, "--threads=1"
  ], check=True)
  got = read_safetensors(out)
  with torch.no_grad():
    logits, hooks = reference(torch.tensor(tokens))
  hooks["logits"] = logits
  worst = 0.0
  report = []
  for key in ["logits"] + HOOKS:
    if tuple(got[key].shape) != tuple(hooks[key].shape):
      print(f"FAIL {label}: {key} has shape {tuple(got[key].shape)}, "
            f"reference {tuple(hooks[key].shape)}")
      return False
    diff = (got[key] - hooks[key]).abs().max().item()
    worst = max(worst, diff)
    report.append(f"{key} {diff:.2e}")
  scale = logits.abs().max().item()
  ok = worst <= TOLERANCE and math.isfinite(worst)
  print(f"{'PASS' if ok else 'FAIL'} {label}: "
        f"max |logit| {scale:.2f}; max abs diff: " + ", ".join(report))
  return ok


def main():
  binary, arch = sys.argv[1], sys.argv[2]
  torch.set_num_threads(1)
  weights_fn, forward_fn, variants = VARIANTS[arch]
  ok = True
  for seed, variant in enumerate(variants):
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as tmp:
      ok = run_variant(binary, weights_fn, forward_fn, *variant, seed, tmp) and ok
  sys.exit(0 if ok else 1)


if __name__ == "__main__":
  main()
