"""@hf_model: the user's pretrained model (--repo_env=HF_MODEL=/path/to/model_dir), the same pattern as
LOCAL_TEXT_CORPUS. Set, its source files are linked in and settings.bzl names the base it replaces and the
block the papers used; unset, the experiments train their own base models as always.

    ./tools/bazel run --config=paper --repo_env=HF_MODEL=/models/gpt2 //experiments/mxd_frontier

settings.bzl: HF_MODEL (the path, "" when unset), HF_MODEL_TYPE (config.json's model_type), HF_MODEL_BASE (the
base name it stands in for: "gelu" for GPT-2 and GPT-NeoX, "swiglu" for Llama), HF_MODEL_LAYER (the block MxD
replaces; --repo_env=HF_MODEL_LAYER=N overrides it) and the shape the Lorsa fits follow: HF_MODEL_N_LAYERS,
HF_MODEL_N_HEADS, HF_MODEL_HEAD_DIM (0 when unset)."""

load(":user_files.bzl", "write_user_files_repository")

# The files import_pretrained reads (pipelines/pretrained/pretrained_import.cc IsSourceFile).
def _is_source_file(name):
    return (name == "config.json" or name.endswith(".safetensors") or
            name.endswith(".safetensors.index.json") or name in ["vocab.json", "merges.txt", "tokenizer.json"])

_BASE_OF_TYPE = {"gpt2": "gelu", "gpt_neox": "gelu", "llama": "swiglu"}

def paper_layer(model_type, n_layers):
    """The block MxD replaces (arXiv:2505.21364 Sec. 3.1): GPT-2 small's layer 8 of 12, the name of its released
    checkpoint; layer 15 for Pythia-410M/1.4B and Llama-3.2-3B, its code's default; else two thirds deep."""
    if model_type == "gpt2" and n_layers == 12:
        return 8
    if model_type in ["gpt_neox", "llama"] and n_layers > 15:
        return 15
    return (2 * n_layers) // 3

def _hf_model_impl(rctx):
    root = rctx.os.environ.get("HF_MODEL", "")
    settings = {
        "HF_MODEL": "",
        "HF_MODEL_TYPE": "",
        "HF_MODEL_BASE": "",
        "HF_MODEL_LAYER": -1,
        "HF_MODEL_N_LAYERS": 0,
        "HF_MODEL_N_HEADS": 0,
        "HF_MODEL_HEAD_DIM": 0,
    }
    files = []
    if root:
        path = rctx.path(root)
        if not path.exists or not path.get_child("config.json").exists:
            fail("HF_MODEL=%s: no config.json there (a Hugging Face model directory: config.json, " % root +
                 "model.safetensors, vocab.json + merges.txt or tokenizer.json)")
        config = json.decode(rctx.read(path.get_child("config.json")))
        model_type = config.get("model_type", "")
        if model_type not in _BASE_OF_TYPE:
            fail("HF_MODEL=%s: model_type '%s' is not one of %s" % (root, model_type, ", ".join(_BASE_OF_TYPE)))
        n_layers = config.get("n_layer", config.get("num_hidden_layers", 0))
        n_heads = config.get("n_head", config.get("num_attention_heads", 0))
        d_model = config.get("n_embd", config.get("hidden_size", 0))
        if n_layers < 1 or n_heads < 1 or d_model < n_heads:
            fail("HF_MODEL=%s: config.json lacks the layer, head or width count" % root)
        head_dim = config.get("head_dim", d_model // n_heads)
        layer = rctx.os.environ.get("HF_MODEL_LAYER", "")
        layer = int(layer) if layer else paper_layer(model_type, n_layers)
        if layer < 0 or layer >= n_layers:
            fail("HF_MODEL_LAYER=%d: the model has blocks 0 to %d" % (layer, n_layers - 1))
        for child in path.readdir():
            if _is_source_file(child.basename):
                rctx.symlink(child, "model/" + child.basename)
                files.append("model/" + child.basename)
        settings = {
            "HF_MODEL": root,
            "HF_MODEL_TYPE": model_type,
            "HF_MODEL_BASE": _BASE_OF_TYPE[model_type],
            "HF_MODEL_LAYER": layer,
            "HF_MODEL_N_LAYERS": n_layers,
            "HF_MODEL_N_HEADS": n_heads,
            "HF_MODEL_HEAD_DIM": head_dim,
        }
    write_user_files_repository(rctx, "The user's model's source files (HF_MODEL)", files, settings)

hf_model = repository_rule(
    implementation = _hf_model_impl,
    environ = ["HF_MODEL", "HF_MODEL_LAYER"],
    local = True,
)
