"""tool_run: one analysis tool as a build action over trained checkpoints, activation caches, token shards and
datasets, each file taken from its producer's provider (CheckpointInfo, ActivationCacheInfo, TokenShardsInfo,
TokenizerInfo, ChessGamesInfo) and passed with ctx.actions.args(), never picked out of a label's files by name.

    tool_run(
        name = "gelu_frontier_s1",
        tool = "//analysis/replacement:evaluate_replacements",
        outs = ["gelu_frontier_s1.csv", "gelu_frontier_s1_units.csv"],
        out_flags = ["--out=", "--unit_frequencies_out="],
        checkpoint_args = {"//experiments/lm_baseline": "--base="},
        tokens = "//datasets/text:shards",
        token_args = {"--tokens=": "test"},
        activation_args = {":gelu_activations": "--activations="},
        args = ["--base_name=gelu"],
        checkpoints = [":gelu_tc_k2_s1", ...],  # positional, last
    )

The tool runs under base/common/quiet.sh: its stderr (progress) goes to `log` when given, else nowhere unless it
fails, when its last 5 lines (the one-line `<program>: error:` last) are shown.
"""

load("@build_identity//:settings.bzl", "TORCH_ENV")
load("//base/common:cpu_slots.bzl", "CPU_SLOT_FLAG")
load("//datasets/chess:chess_data.bzl", "ChessGamesInfo")
load("//datasets/text:text_data.bzl", "TokenShardsInfo", "TokenizerInfo")
load(":providers.bzl", "ActivationCacheInfo", "CheckpointInfo", "split_manifest")

def _split(label, splits, split):
    if split not in splits:
        fail("%s has no %s split (it has %s)" % (label, split, ", ".join(splits.keys())))
    return splits[split]

def _tokenizer(target):
    """(the path Tokenizer::Load takes, every file it reads) of a tokenizer or of token shards."""
    if TokenizerInfo in target:
        return target[TokenizerInfo].model, target[TokenizerInfo].files
    if TokenShardsInfo in target:
        return target[TokenShardsInfo].tokenizer, target[TokenShardsInfo].tokenizer_files
    fail("%s is neither a tokenizer nor token shards" % target.label)

def _single_file(target):
    files = target.files.to_list()
    if len(files) != 1:
        fail("%s must be one file, not %d" % (target.label, len(files)))
    return files[0]

def _tool_run_impl(ctx):
    args = ctx.actions.args()
    inputs = []

    for target, flag in ctx.attr.checkpoint_args.items():
        checkpoint = target[CheckpointInfo].checkpoint
        inputs.append(checkpoint)
        args.add(checkpoint, format = flag + "%s")

    if ctx.attr.named_checkpoints:
        # "<name>=<checkpoint>,...": several models for one flag.
        named = []
        for target, model_name in ctx.attr.named_checkpoints.items():
            checkpoint = target[CheckpointInfo].checkpoint
            inputs.append(checkpoint)
            named.append("%s=%s" % (model_name, checkpoint.path))
        args.add(ctx.attr.named_checkpoints_flag + ",".join(named))

    if ctx.attr.token_args and not ctx.attr.tokens:
        fail("token_args needs tokens")
    for flag, split in ctx.attr.token_args.items():
        directory = _split(ctx.attr.tokens.label, ctx.attr.tokens[TokenShardsInfo].splits, split)
        inputs.append(directory)
        args.add(flag + split_manifest(directory, split, "tokens"))

    if ctx.attr.tokenizer:
        tokenizer, tokenizer_files = _tokenizer(ctx.attr.tokenizer)
        inputs.extend(tokenizer_files)
        args.add(tokenizer, format = ctx.attr.tokenizer_flag + "%s")

    split = ctx.attr.activation_split
    for target, flag in ctx.attr.activation_args.items():
        directory = _split(target.label, target[ActivationCacheInfo].splits, split)
        inputs.append(directory)
        args.add(flag + split_manifest(directory, split, "activations"))
    if ctx.attr.layered_activations:
        # "<layer>=<manifest>,...": caches of several blocks for one tool.
        layered = []
        for target in ctx.attr.layered_activations:
            cache = target[ActivationCacheInfo]
            directory = _split(target.label, cache.splits, split)
            inputs.append(directory)
            layered.append("%d=%s" % (cache.layer, split_manifest(directory, split, "activations")))
        args.add(ctx.attr.layered_activations_flag + ",".join(layered))

    if ctx.attr.bsp_games:
        games = ctx.attr.bsp_games[ChessGamesInfo]
        inputs += [games.bsp_train, games.bsp_test]
        args.add(games.bsp_train, format = "--bsp_train=%s")
        args.add(games.bsp_test, format = "--bsp_test=%s")

    for target, flag in ctx.attr.file_args.items():
        f = _single_file(target)
        inputs.append(f)
        args.add(f, format = flag + "%s")
    for target, flag in ctx.attr.file_list_args.items():
        files = target.files.to_list()
        inputs += files
        args.add_joined(files, join_with = ",", format_joined = flag + "%s")
    for target, flag in ctx.attr.directory_args.items():
        files = target.files.to_list()
        inputs += files
        args.add(flag + files[0].dirname)

    args.add_all(ctx.attr.args)
    if ctx.attr.cpu_slot:
        args.add(CPU_SLOT_FLAG)

    if len(ctx.attr.out_flags) != len(ctx.outputs.outs):
        fail("out_flags must give one flag (or \"\") per output")
    for out, flag in zip(ctx.outputs.outs, ctx.attr.out_flags):
        if flag:
            args.add(out, format = flag + "%s")
    if ctx.attr.out_dir_flag:
        args.add(ctx.attr.out_dir_flag + ctx.outputs.outs[0].dirname)

    for target in ctx.attr.checkpoints:
        checkpoint = target[CheckpointInfo].checkpoint
        inputs.append(checkpoint)
        args.add(checkpoint)

    log = [ctx.outputs.log] if ctx.outputs.log else []
    outputs = ctx.outputs.outs + log
    ctx.actions.run(
        executable = ctx.executable._quiet,
        env = TORCH_ENV,  # OpenBLAS's kernels as @build_identity records them, OpenMP's spin
        arguments = (["--discard_stdout"] if ctx.attr.discard_stdout else []) +
                    [log[0].path if log else "-", ctx.executable.tool.path, args],
        inputs = inputs,
        tools = [ctx.attr.tool[DefaultInfo].files_to_run],
        outputs = outputs,
        mnemonic = ctx.attr.mnemonic,
        progress_message = ctx.attr.message or "Running %s for %s" % (ctx.attr.tool.label.name, ctx.label),
    )
    return [DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs))]

tool_run = rule(
    implementation = _tool_run_impl,
    doc = "`outs` from `tool` over providers' files; flags in the order: checkpoint_args, named_checkpoints, " +
          "token_args, tokenizer, activations, bsp_games, file_args, file_list_args, directory_args, args, the CPU " +
          "slot, outputs, checkpoints.",
    attrs = {
        "tool": attr.label(mandatory = True, executable = True, cfg = "target"),
        "outs": attr.output_list(mandatory = True),
        "out_flags": attr.string_list(doc = "Per output: its flag prefix (\"--out=\"), or \"\" for none."),
        "out_dir_flag": attr.string(doc = "A flag prefix given the first output's directory (\"--out_dir=\")."),
        "log": attr.output(doc = "Keeps the tool's stderr; without it stderr is shown only on failure."),
        "checkpoint_args": attr.label_keyed_string_dict(
            providers = [CheckpointInfo],
            doc = "Trained checkpoint -> flag prefix (\"--base=\").",
        ),
        "named_checkpoints": attr.label_keyed_string_dict(
            providers = [CheckpointInfo],
            doc = "Checkpoint -> model name, given as <name>=<path>,... to named_checkpoints_flag.",
        ),
        "named_checkpoints_flag": attr.string(default = "--models="),
        "checkpoints": attr.label_list(providers = [CheckpointInfo], doc = "Checkpoints passed last, positionally."),
        "tokens": attr.label(providers = [TokenShardsInfo]),
        "token_args": attr.string_dict(doc = "Flag prefix -> split of `tokens` whose manifest it is given."),
        "tokenizer": attr.label(doc = "A sentencepiece_tokenizer, or token shards (their tokenizer)."),
        "tokenizer_flag": attr.string(default = "--tokenizer="),
        "activation_args": attr.label_keyed_string_dict(
            providers = [ActivationCacheInfo],
            doc = "Activation cache -> flag prefix given its activation_split manifest.",
        ),
        "layered_activations": attr.label_list(providers = [ActivationCacheInfo]),
        "layered_activations_flag": attr.string(doc = "Given <layer>=<manifest>,... of layered_activations."),
        "activation_split": attr.string(default = "test"),
        "bsp_games": attr.label(providers = [ChessGamesInfo], doc = "Adds --bsp_train= and --bsp_test=."),
        "file_args": attr.label_keyed_string_dict(allow_files = True, doc = "One-file label -> flag prefix."),
        "file_list_args": attr.label_keyed_string_dict(
            allow_files = True,
            doc = "Label -> flag prefix given its files joined by commas.",
        ),
        "directory_args": attr.label_keyed_string_dict(
            allow_files = True,
            doc = "Label -> flag prefix given the directory of its first file.",
        ),
        "args": attr.string_list(doc = "Literal arguments."),
        "discard_stdout": attr.bool(doc = "Drop the tool's stdout (a report it prints besides its outputs)."),
        "cpu_slot": attr.bool(default = True, doc = "Take a CPU slot (base/common/cpu_slots.h)."),
        "mnemonic": attr.string(default = "ToolRun"),
        "message": attr.string(),
        "_quiet": attr.label(
            default = "//base/common:quiet.sh",
            executable = True,
            cfg = "target",
            allow_single_file = True,
        ),
    },
)
