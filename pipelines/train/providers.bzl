"""What a training or a cache hands its consumers, named instead of picked out of a label's files by extension."""

CheckpointInfo = provider(
    doc = "A trainer output (lm_checkpoint, replacement_checkpoint).",
    fields = {
        "checkpoint": "File: <name>.pt, the model state with its config and digest inside.",
        "log": "File: <name>.csv, the train/validation loss log.",
        "summary": "File: <name>.summary.textproto (steps, tokens, losses, wall time).",
    },
)

CheckpointSnapshotsInfo = provider(
    doc = "An lm_checkpoint's snapshots along its training (snapshot_percents).",
    fields = {
        "snapshots": "dict: percent of the budget's steps (int) -> File, <name>.at<percent>pct.pt.",
        "log": "File: the run's <name>.csv.",
        "summary": "File: the run's <name>.summary.textproto.",
    },
)

def split_manifest(directory, split, kind):
    """The manifest of one split's directory of token shards (kind "tokens") or activations ("activations"):
    <directory>/<split>.<kind>.textproto."""
    return "%s/%s.%s.textproto" % (directory.path, split, kind)

ActivationCacheInfo = provider(
    doc = "An activation_cache: one block's activation pairs per token split.",
    fields = {
        "splits": "dict: split name (train, validation, test) -> the split's directory (File); " +
                  "<dir>/<split>.activations.textproto is its manifest.",
        "layer": "int: the block the activations were read at.",
        "site": "string: ffn or attn.",
        "checkpoint": "File: the .pt they were read from.",
    },
)
