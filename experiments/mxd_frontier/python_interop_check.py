"""The MxD experiment's exports read back in PyTorch, without this project's code (issue: interop out).

Arguments: <cache export dir> <raw cache split dir> <transcoder export> <mxd export> <frontier csv>.
Checks, each a failing assertion:
  1. every exported shard file is a valid safetensors file (read here with struct and json, the tensors with
     torch.frombuffer), and its "inputs"/"targets" equal the raw cache shard's interleaved rows bit for bit
     (the shard format of pipelines/activations/activation_shards.h, parsed independently here);
  2. the Transcoder, run in PyTorch from its exported tensors as fit_export.h documents it
     (y = TopK(ReLU(x encoder + encoder_bias)) decoder + output_bias), gives on the exported test rows the
     relative MSE that the experiment's own frontier CSV reports for that fit;
  3. the MxD export carries its documented tensors with consistent shapes.
Prints one line per check and "N passed, 0 failed".
"""
import csv
import glob
import json
import os
import re
import struct
import sys

import torch


def read_safetensors(path):
    """{name: float32 tensor}, metadata; rejects anything the format does not allow."""
    with open(path, "rb") as f:
        data = f.read()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_size].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    buffer = memoryview(data)[8 + header_size:]
    tensors, covered = {}, 0
    for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"][0]):
        assert entry["dtype"] == "F32", (path, name, entry["dtype"])
        begin, end = entry["data_offsets"]
        assert begin == covered, (path, name, "hole or overlap")
        count = 1
        for size in entry["shape"]:
            count *= size
        assert end - begin == 4 * count, (path, name, "size")
        tensors[name] = torch.frombuffer(bytearray(buffer[begin:end]), dtype=torch.float32).reshape(entry["shape"])
        covered = end
    assert covered == len(buffer), (path, "trailing bytes")
    return tensors, metadata


def read_raw_shard(path):
    """(x, y) of one cache shard: 32-byte header "SLACTv1\\0", u32 d_in, u32 d_out, u64 rows, u64 reserved."""
    with open(path, "rb") as f:
        data = f.read()
    magic, d_in, d_out, rows, _ = struct.unpack("<8sIIQQ", data[:32])
    assert magic == b"SLACTv1\0", (path, magic)
    table = torch.frombuffer(bytearray(data[32:]), dtype=torch.float32).reshape(rows, d_in + d_out)
    return table[:, :d_in], table[:, d_in:]


def main(export_dir, raw_dir, transcoder_path, mxd_path, frontier_csv):
    passed = 0
    manifest = open(glob.glob(os.path.join(raw_dir, "*.activations.textproto"))[0]).read()
    raw_files = re.findall(r'file: "([^"]+)"', manifest)
    exported = sorted(glob.glob(os.path.join(export_dir, "*.safetensors")))
    assert len(exported) == len(raw_files) > 0, (exported, raw_files)
    inputs, targets = [], []
    first_row = 0
    for path, raw in zip(exported, raw_files):
        tensors, metadata = read_safetensors(path)
        assert metadata["format"] == "sparse_layers.activations.v1", metadata
        assert int(metadata["first_row"]) == first_row, (path, metadata["first_row"], first_row)
        x, y = read_raw_shard(os.path.join(raw_dir, raw))
        assert torch.equal(tensors["inputs"], x) and torch.equal(tensors["targets"], y), path
        inputs.append(x)
        targets.append(y)
        first_row += x.shape[0]
    x, y = torch.cat(inputs), torch.cat(targets)
    print(f"cache: {len(exported)} files, {x.shape[0]} rows of {metadata['hook_in']} -> {metadata['hook_out']}, "
          "equal to the raw shards bit for bit")
    passed += 1

    tc, meta = read_safetensors(transcoder_path)
    assert meta["format"] == "sparse_layers.fit.v1" and meta["site"] == "ffn", meta
    k = int(meta["top_k"])
    pre = torch.relu(x @ tc["encoder"] + tc["encoder_bias"])
    values, indices = pre.topk(k, dim=-1)
    codes = torch.zeros_like(pre).scatter_(-1, indices, values)
    y_hat = codes @ tc["decoder"] + tc["output_bias"]
    relative_mse = ((y_hat - y).pow(2).sum() / y.pow(2).sum()).item()
    name = os.path.basename(transcoder_path).replace(".safetensors", "")
    rows = [r for r in csv.DictReader(open(frontier_csv)) if r["name"] == name]
    assert len(rows) == 1, (name, frontier_csv)
    reported = float(rows[0]["relative_mse"])
    assert abs(relative_mse - reported) <= 1e-3 * abs(reported), (relative_mse, reported)
    print(f"transcoder {name} (K={k}) in PyTorch: relative MSE {relative_mse:.6g}, "
          f"the frontier reports {reported:.6g}")
    passed += 1

    mxd, meta = read_safetensors(mxd_path)
    n_experts, d_in = mxd["gate"].shape
    assert meta["layer_type"].startswith("mxd") and d_in == x.shape[1], meta
    assert mxd["experts"].shape == (n_experts, y.shape[1]), mxd["experts"].shape
    assert mxd["decoder"].shape == (mxd["encoder"].shape[1], y.shape[1])
    print(f"mxd: {meta['layer_type']} with {n_experts} experts, tensors {sorted(mxd)}")
    passed += 1
    print(f"{passed} passed, 0 failed")


if __name__ == "__main__":
    main(*sys.argv[1:])
