#!/usr/bin/env python3
"""The SAE sparsity rules recomputed in python3-torch from their papers, against
one training step of our layer (sae_reference_fixture): output, loss and every
gradient, and BatchTopK's threshold update.

  SAE (Bricken et al. 2023; the MxD authors' sparse_autoencoder.py):
    p = (x - b_dec) W_enc + b_enc,  x_hat = f(p) W_dec + b_dec,
    loss = mean_{b,o} (x_hat - x)^2 / |x_b|  + penalty.
  ReLU + L1 (Anthropic, "Circuits Updates - April 2024"): f = ReLU(p),
    penalty = lambda mean_b sum_n f_n |W_dec,n|.
  JumpReLU (Rajamanoharan et al., arXiv:2407.14435 Eqs. 4, 10-12 and the
    pseudo-code of its App. J): f = p H(p - theta), theta = exp(log_threshold),
    penalty = lambda mean_b sum_n H(p_n - theta_n); straight-through
    pseudo-derivatives with the rectangle kernel of width epsilon.
  BatchTopK (Bussmann et al., arXiv:2412.06410 Sec. 3): in training the
    k * B largest ReLU(p) of the batch; theta is the running mean of the
    smallest kept activation (ours: weight 0.01 per step, bias-corrected); in
    evaluation f = ReLU(p) 1[p > theta].
Usage: sae_reference_test.py FIXTURE_BINARY
"""
import os
import subprocess
import sys
import tempfile

import torch

BANDWIDTH = 0.2  # The fixture's epsilon.
PENALTY = {"relu_l1": 0.3, "jump_relu": 0.05}
K = 4


def rectangle(u):
  return ((u > -0.5) & (u < 0.5)).to(u.dtype)


class Step(torch.autograd.Function):
  """H(z - theta); d/dtheta = -(1/eps) K((z - theta)/eps), none for z."""

  @staticmethod
  def forward(ctx, z, theta):
    ctx.save_for_backward(z, theta)
    return (z > theta).to(z.dtype)

  @staticmethod
  def backward(ctx, g):
    z, theta = ctx.saved_tensors
    grad_theta = -(1.0 / BANDWIDTH) * rectangle((z - theta) / BANDWIDTH) * g
    return torch.zeros_like(z), grad_theta.sum(0)


class JumpReLU(torch.autograd.Function):
  """z H(z - theta); dz = H(z - theta), dtheta = -(theta/eps) K((z - theta)/eps)."""

  @staticmethod
  def forward(ctx, z, theta):
    ctx.save_for_backward(z, theta)
    return z * (z > theta).to(z.dtype)

  @staticmethod
  def backward(ctx, g):
    z, theta = ctx.saved_tensors
    grad_z = (z > theta).to(z.dtype) * g
    grad_theta = -(theta / BANDWIDTH) * rectangle((z - theta) / BANDWIDTH) * g
    return grad_z, grad_theta.sum(0)


def reference(case, t):
  """Output, loss, gradients by name and buffers after the step."""
  rule = case.removesuffix("_wide")
  names = [n for n in ("encoder", "encoder_bias", "decoder", "output_bias",
                       "log_threshold") if f"{case}.{n}" in t]
  p = {n: t[f"{case}.{n}"].clone().requires_grad_(True) for n in names}
  x = t[f"{case}.x"]
  pre = (x - p["output_bias"]) @ p["encoder"] + p["encoder_bias"]
  penalty = 0
  after = {}
  if rule == "relu_l1":
    f = torch.relu(pre)
    penalty = PENALTY[rule] * (f * p["decoder"].norm(dim=1)).sum(1).mean()
  elif rule == "jump_relu":
    theta = p["log_threshold"].exp()
    f = JumpReLU.apply(pre, theta)
    penalty = PENALTY[rule] * Step.apply(pre, theta).sum(1).mean()
  elif rule == "batch_topk_train":
    acts = torch.relu(pre)
    flat = acts.flatten()
    values, indices = flat.topk(K * acts.shape[0])
    f = torch.zeros_like(flat).scatter(0, indices, values).view_as(acts)
    smallest = values[values > 0].min().detach()
    after["threshold_sum"] = 0.99 * t[f"{case}.threshold_sum"] + smallest
    after["threshold_weight"] = 0.99 * t[f"{case}.threshold_weight"] + 1
  elif rule == "batch_topk_eval":
    theta = t[f"{case}.threshold_sum"] / t[f"{case}.threshold_weight"]
    f = torch.relu(pre) * (pre > theta).to(pre.dtype)
  else:
    raise ValueError(case)
  out = f @ p["decoder"] + p["output_bias"]
  loss = ((out - x) ** 2 / x.norm(dim=1, keepdim=True)).mean() + penalty
  loss.backward()
  return out.detach(), loss.detach(), {n: p[n].grad for n in names}, after


def close(name, ours, theirs, failures):
  if theirs is None:
    theirs = torch.zeros_like(ours)
  if ours.shape != theirs.shape or not torch.allclose(
      ours, theirs, rtol=1e-4, atol=1e-6):
    failures.append(name)
    print(f"MISMATCH {name}: largest difference "
          f"{(ours - theirs).abs().max().item() if ours.shape == theirs.shape else 'shape'}")
  else:
    print(f"ok {name}: largest difference {(ours - theirs).abs().max().item():.2e}")


def main():
  fixture = sys.argv[1]
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "fixture.pt")
    subprocess.run([fixture, f"--out={path}"], check=True)
    t = torch.load(path)
  failures = []
  # The "_wide" cases have 640 units and sparse pre-codes: the layer lists
  # its codes there (SparseDot, SparseDecode) instead of decoding densely.
  for case in ("relu_l1", "jump_relu", "batch_topk_train", "batch_topk_eval",
               "relu_l1_wide", "jump_relu_wide", "batch_topk_train_wide",
               "batch_topk_eval_wide"):
    out, loss, grads, after = reference(case, t)
    close(f"{case}.out", t[f"{case}.out"], out, failures)
    close(f"{case}.loss", t[f"{case}.loss"], loss, failures)
    for name, grad in grads.items():
      close(f"{case}.grad.{name}", t[f"{case}.grad.{name}"], grad, failures)
    for name, value in after.items():
      close(f"{case}.after.{name}", t[f"{case}.after.{name}"], value, failures)
  # The cases must exercise what they test: codes both kept and dropped, and
  # JumpReLU's kernel firing (else its threshold gradients are trivially 0).
  for case in ("jump_relu", "jump_relu_wide"):
    if t[f"{case}.grad.log_threshold"].ne(0).sum() == 0:
      failures.append(f"{case}: no pre-code within the kernel")
  for case in ("relu_l1_wide", "jump_relu_wide", "batch_topk_train_wide",
               "batch_topk_eval_wide"):
    # At most 640 / 16 units per row fire: the listed path (kListedShare).
    x = t[f"{case}.x"]
    pre = ((x - t[f"{case}.output_bias"]) @ t[f"{case}.encoder"]
           + t[f"{case}.encoder_bias"])
    widest = (pre > 0).sum(1).max().item()
    if not 0 < widest <= 40:
      failures.append(f"{case}: {widest} positive pre-codes in a row, not "
                      "the listed regime")
  if failures:
    print(f"FAIL: {len(failures)} mismatches: {', '.join(failures)}")
    sys.exit(1)
  print("all rules match their papers' definitions")


if __name__ == "__main__":
  main()
