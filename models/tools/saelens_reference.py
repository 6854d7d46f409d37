"""SAELens's SAE forward, recomputed in python3-torch from a SAELens
directory alone, against the codes and reconstructions our fit produced.

Follows SAELens 6.x (sae_lens/saes/sae.py load_from_disk and process_sae_in,
saes/topk_sae.py, standard_sae.py and jumprelu_sae.py encode/decode):
cfg.json names architecture "topk" (with k), "standard" or "jumprelu", d_in,
d_sae, dtype and metadata.sae_lens_version (>= 6); then
  h = (x - b_dec * apply_b_dec_to_input) @ W_enc + b_enc,
  h *= |W_dec row| when rescale_acts_by_decoder_norm (topk),
  codes = ReLU of the k largest h (scattered into zeros) for topk,
          ReLU(h) for standard, ReLU(h) * (h > threshold) for jumprelu,
  x_hat = (codes / |W_dec row| when rescaling) @ W_dec + b_dec.
Usage: saelens_reference.py check SAE_DIR ROWS.safetensors
       saelens_reference.py fold SAE_DIR OUT_DIR: the same SAE written the way
         SAELens's trainer leaves many (apply_b_dec_to_input false, decoder
         rows rescaled by random norms with rescale_acts_by_decoder_norm);
         SAE_DIR must have unit-norm decoder rows.
"""
import json
import struct
import sys

import torch


def load(path):
  """name -> float32 tensor of a safetensors file (u64 header size, JSON, data)."""
  raw = open(path, "rb").read()
  (size,) = struct.unpack("<Q", raw[:8])
  header = json.loads(raw[8:8 + size])
  body = raw[8 + size:]
  out = {}
  for name, info in header.items():
    if name == "__metadata__":
      continue
    assert info["dtype"] == "F32", (name, info["dtype"])
    begin, end = info["data_offsets"]
    out[name] = torch.frombuffer(bytearray(body[begin:end]),
                                 dtype=torch.float32).reshape(info["shape"])
  return out


def save(path, tensors):
  """A float32 safetensors file, by the format's definition."""
  header, blobs, offset = {}, [], 0
  for name in sorted(tensors):
    data = tensors[name].contiguous().numpy().tobytes()
    header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                    "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
  text = json.dumps(header).encode()
  text += b" " * (-len(text) % 8)
  with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def fold(sae_dir, out_dir):
  import os
  cfg = json.load(open(sae_dir + "/cfg.json"))
  w = load(sae_dir + "/sae_weights.safetensors")
  assert cfg["apply_b_dec_to_input"] and not cfg["rescale_acts_by_decoder_norm"]
  norms = w["W_dec"].norm(dim=1)
  assert torch.allclose(norms, torch.ones_like(norms), atol=1e-5), norms
  scale = torch.rand(cfg["d_sae"], generator=torch.Generator().manual_seed(3)) * 3 + 0.5
  b_enc = w["b_enc"] - w["b_dec"] @ w["W_enc"]  # The input's b_dec, folded.
  folded = {"W_enc": w["W_enc"] / scale, "b_enc": b_enc / scale,
            "W_dec": w["W_dec"] * scale.unsqueeze(1), "b_dec": w["b_dec"]}
  cfg["apply_b_dec_to_input"] = False
  cfg["rescale_acts_by_decoder_norm"] = True
  os.makedirs(out_dir)
  json.dump(cfg, open(out_dir + "/cfg.json", "w"))
  save(out_dir + "/sae_weights.safetensors", folded)


def check(sae_dir, rows_path):
  cfg = json.load(open(sae_dir + "/cfg.json"))
  # What SAE.load_from_disk needs of a v6 cfg.
  architecture = cfg["architecture"]
  assert architecture in ("topk", "standard", "jumprelu"), architecture
  assert cfg["dtype"] == "float32"
  assert int(cfg["metadata"]["sae_lens_version"].split(".")[0]) >= 6
  assert cfg["normalize_activations"] == "none"
  assert cfg["reshape_activations"] == "none"
  assert cfg["metadata"]["hook_name"].endswith("hook_mlp_out")
  w = load(sae_dir + "/sae_weights.safetensors")
  expected = ["W_dec", "W_enc", "b_dec", "b_enc"]
  if architecture == "jumprelu":
    expected.append("threshold")
    assert w["threshold"].shape == (cfg["d_sae"],)
  assert sorted(w) == expected, sorted(w)
  d_in, d_sae, k = cfg["d_in"], cfg["d_sae"], cfg.get("k")
  assert (k is not None) == (architecture == "topk"), cfg
  assert w["W_enc"].shape == (d_in, d_sae) and w["W_dec"].shape == (d_sae, d_in)
  assert w["b_enc"].shape == (d_sae,) and w["b_dec"].shape == (d_in,)
  rows = load(rows_path)
  x = rows["y"]
  sae_in = x - w["b_dec"] * float(cfg["apply_b_dec_to_input"])
  h = sae_in @ w["W_enc"] + w["b_enc"]
  norm = w["W_dec"].norm(dim=1)
  rescale = cfg.get("rescale_acts_by_decoder_norm", False)
  if rescale:
    h = h * norm
  if architecture == "topk":
    top = torch.topk(h, k, dim=-1, sorted=False)
    codes = torch.zeros_like(h).scatter(-1, top.indices, torch.relu(top.values))
  elif architecture == "standard":
    codes = torch.relu(h)
  else:
    codes = torch.relu(h) * (h > w["threshold"]).to(h.dtype)
  x_hat = (codes / norm if rescale else codes) @ w["W_dec"] + w["b_dec"]
  code_error = (codes - rows["codes"]).abs().max().item()
  output_error = (x_hat - rows["y_hat"]).abs().max().item()
  active = (codes > 0).sum(-1).float().mean().item()
  print(f"{architecture}: rows {x.shape[0]}, d_in {d_in}, d_sae {d_sae}, k {k}: mean active "
        f"{active:.2f}, max |codes - ours| {code_error:.2e}, "
        f"max |x_hat - ours| {output_error:.2e}")
  if not 0 < active < d_sae:
    sys.exit("saelens_reference: the rows fire no code or every code")
  if not (code_error < 1e-4 and output_error < 1e-4):
    sys.exit("saelens_reference: SAELens's forward disagrees with our fit")


if __name__ == "__main__":
  {"check": check, "fold": fold}[sys.argv[1]](*sys.argv[2:])
