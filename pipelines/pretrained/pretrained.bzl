"""pretrained_model: the user's model (@hf_model) imported as a base model, a cached build action whose key is
the source files' contents: <name>.pt (CheckpointInfo, as a trained base), <name>.textproto (the config fits
build on), <name>.manifest.textproto (SHA-256 of every source file) and <name>_tokenizer/: vocab.json and
merges.txt where the model has them (GPT-2), else tokenizer.json (Pythia, Llama 3), or a nanoGPT model's
vocabulary.chars (TokenizerInfo: the files Tokenizer::Load reads, for token_shards and the tools that encode
text). `files` is a Hugging Face directory's files or a nanoGPT ckpt.pt with its meta.pkl."""

load("@build_identity//:settings.bzl", "TORCH_ENV")
load("//datasets/text:text_data.bzl", "TokenizerInfo")
load("//pipelines/train:providers.bzl", "CheckpointInfo")

def _pretrained_model_impl(ctx):
    configs = [f for f in ctx.files.files if f.basename == "config.json"]
    checkpoints = [f for f in ctx.files.files if f.basename.endswith(".pt")]
    names = [f.basename for f in ctx.files.files]
    if configs:
        # A Hugging Face directory. GPT-2's BPE files under their Hugging Face names, side by side
        # (Tokenizer::Load of vocab.json), where the model has them; else its tokenizer.json (import_pretrained
        # copies the same choice).
        source = configs[0].dirname
        tokenizer_names = ["vocab.json", "merges.txt"] if "vocab.json" in names else ["tokenizer.json"]
    elif checkpoints:
        # A nanoGPT ckpt.pt; its meta.pkl becomes a character vocabulary.
        source = checkpoints[0].path
        tokenizer_names = ["vocabulary.chars"]
    else:
        fail("%s: neither config.json nor a nanoGPT ckpt.pt among %s" % (ctx.label, ctx.attr.files.label))
    tokenizer = [ctx.actions.declare_file(ctx.label.name + "_tokenizer/" + name) for name in tokenizer_names]
    ctx.actions.run(
        executable = ctx.executable._import_pretrained,
        env = TORCH_ENV,  # OpenBLAS's kernels as @build_identity records them, OpenMP's spin
        arguments = [
            "--from=" + source,
            "--out=" + ctx.outputs.checkpoint.path,
            "--config_out=" + ctx.outputs.config.path,
            "--manifest_out=" + ctx.outputs.manifest.path,
            "--tokenizer_out=" + tokenizer[0].dirname,
            "--sequence_length=%d" % ctx.attr.sequence_length,
        ],
        inputs = ctx.files.files,
        outputs = [ctx.outputs.checkpoint, ctx.outputs.config, ctx.outputs.manifest] + tokenizer,
        mnemonic = "ImportPretrained",
        progress_message = "Importing the pretrained model %s" % ctx.attr.files.label,
    )
    outputs = [ctx.outputs.checkpoint, ctx.outputs.config, ctx.outputs.manifest] + tokenizer
    return [
        DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs)),
        CheckpointInfo(checkpoint = ctx.outputs.checkpoint, log = ctx.outputs.manifest, summary = ctx.outputs.manifest),
        TokenizerInfo(model = tokenizer[0], files = tokenizer),
    ]

pretrained_model = rule(
    implementation = _pretrained_model_impl,
    doc = "import_pretrained on a Hugging Face model directory's files.",
    attrs = {
        "files": attr.label(
            mandatory = True,
            allow_files = True,
            doc = "config.json, the safetensors, the tokenizer; or ckpt.pt and meta.pkl.",
        ),
        "sequence_length": attr.int(default = 128, doc = "The experiments' token window (data.sequence_length)."),
        "_import_pretrained": attr.label(
            default = "//pipelines/pretrained:import_pretrained",
            executable = True,
            cfg = "target",
        ),
    },
    outputs = {
        "checkpoint": "%{name}.pt",
        "config": "%{name}.textproto",
        "manifest": "%{name}.manifest.textproto",
    },
)

def _saelens_fit_impl(ctx):
    configs = [f for f in ctx.files.sae if f.basename == "cfg.json"]
    if len(configs) != 1:
        fail("%s: %s holds no single cfg.json (a SAELens SAE directory)" % (ctx.label, ctx.attr.sae.label))
    base = ctx.attr.base[CheckpointInfo].checkpoint
    ctx.actions.run(
        executable = ctx.executable._import_saelens,
        env = TORCH_ENV,  # OpenBLAS's kernels as @build_identity records them, OpenMP's spin
        arguments = [
            "--sae_dir=" + configs[0].dirname,
            "--base=" + base.path,
            "--out=" + ctx.outputs.checkpoint.path,
        ],
        inputs = ctx.files.sae + [base],
        outputs = [ctx.outputs.checkpoint],
        mnemonic = "ImportSaeLens",
        progress_message = "Importing the SAELens SAE %s onto %s" % (ctx.attr.sae.label, ctx.attr.base.label),
    )

    # What the report lists: the SHA-256 of the directory's files, then its cfg.json.
    ctx.actions.run_shell(
        inputs = ctx.files.sae,
        outputs = [ctx.outputs.card],
        command = """out=$1; cfg=$2; shift 2
{ echo "SAELens SAE (SAELENS_SAE): SHA-256 of its files"
  for f in "$@"; do printf '%s  %s\\n' "$(sha256sum "$f" | cut -d' ' -f1)" "$(basename "$f")"; done
  echo "cfg.json:"; cat "$cfg"; echo; } > "$out"
""",
        arguments = [ctx.outputs.card.path, configs[0].path] + [f.path for f in ctx.files.sae],
        mnemonic = "SaeLensCard",
        progress_message = "Describing the SAELens SAE %s" % ctx.attr.sae.label,
    )
    return [
        DefaultInfo(files = depset([ctx.outputs.checkpoint, ctx.outputs.card])),
        CheckpointInfo(checkpoint = ctx.outputs.checkpoint, log = ctx.outputs.card, summary = ctx.outputs.card),
    ]

saelens_fit = rule(
    implementation = _saelens_fit_impl,
    doc = "import_saelens: a SAELens SAE directory's files on a base model, as a fit checkpoint every fit-reading " +
          "tool takes (<name>.pt) and a card of its file digests and cfg.json (<name>.txt).",
    attrs = {
        "sae": attr.label(mandatory = True, allow_files = True, doc = "cfg.json and sae_weights.safetensors."),
        "base": attr.label(mandatory = True, providers = [CheckpointInfo], doc = "The base model the SAE reads."),
        "_import_saelens": attr.label(
            default = "//models/tools:import_saelens",
            executable = True,
            cfg = "target",
        ),
    },
    outputs = {
        "checkpoint": "%{name}.pt",
        "card": "%{name}.txt",
    },
)
