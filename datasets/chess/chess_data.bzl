"""chess_games: the chess dataset chain as three cacheable actions (MoE-X, arXiv:2503.07639 Sec. 5.1).

1. generate_games drives Debian's Stockfish over UCI (random legal games from `go perft 1`, engine games
   from node-limited MultiPV search sampled with a seeded softmax) and writes long-algebraic PGN.
2. pgn-extract converts it to SAN and writes the FEN after every move.
3. build_chess_dataset writes character token shards (train/, validation/) and the BSP-train / BSP-test
   games with their positions (JSONL), plus a manifest.
"""

def _chess_games_impl(ctx):
    prefix = ctx.label.name + "/"
    lalg = ctx.actions.declare_file(prefix + "games.lalg.pgn")
    games_manifest = ctx.actions.declare_file(prefix + "games.manifest.textproto")

    # BSP games must hold 20 '.' in 256 characters; a quarter more covers the few that end early.
    pool = ctx.attr.train_games + ctx.attr.validation_games + (ctx.attr.bsp_games * 2 * 5) // 4 + 10
    ctx.actions.run(
        executable = ctx.executable._generate,
        arguments = [
            "--engine=" + ctx.attr.engine,
            "--games=%d" % pool,
            "--seed=%d" % ctx.attr.seed,
            "--random_fraction=%s" % ctx.attr.random_fraction,
            "--levels=" + ",".join(ctx.attr.levels),
            "--max_plies=%d" % ctx.attr.max_plies,
            "--workers=2",
            "--out=" + lalg.path,
            "--manifest=" + games_manifest.path,
        ],
        outputs = [lalg, games_manifest],
        mnemonic = "ChessGames",
        progress_message = "Playing %d chess games for %s" % (pool, ctx.label),
    )
    san = ctx.actions.declare_file(prefix + "games.san.pgn")
    ctx.actions.run_shell(
        # pgn-extract's progress stays out of the build log; a failure shows its last lines.
        command = ("log=$(mktemp); %s -s -Wsan --fencomments -w 1000000 \"$1\" > \"$2\" 2> \"$log\" && " +
                   "test -s \"$2\" || { tail -n 5 \"$log\" >&2; rm -f \"$log\"; exit 1; }; rm -f \"$log\"") %
                  ctx.attr.pgn_extract,
        arguments = [lalg.path, san.path],
        inputs = [lalg],
        outputs = [san],
        mnemonic = "PgnExtract",
        progress_message = "pgn-extract: SAN and FENs for %s" % ctx.label,
    )
    train = ctx.actions.declare_directory(prefix + "train")
    validation = ctx.actions.declare_directory(prefix + "validation")
    bsp_train = ctx.actions.declare_file(prefix + "bsp_train.jsonl")
    bsp_test = ctx.actions.declare_file(prefix + "bsp_test.jsonl")
    manifest = ctx.actions.declare_file(prefix + "dataset.manifest.textproto")
    ctx.actions.run(
        executable = ctx.executable._build,
        arguments = [
            "--pgn=" + san.path,
            "--games_manifest=" + games_manifest.path,
            "--train_games=%d" % ctx.attr.train_games,
            "--validation_games=%d" % ctx.attr.validation_games,
            "--bsp_games=%d" % ctx.attr.bsp_games,
            "--out_dir=" + manifest.dirname,
        ],
        inputs = [san, games_manifest],
        outputs = [train, validation, bsp_train, bsp_test, manifest],
        mnemonic = "ChessDataset",
        progress_message = "Building the chess splits of %s" % ctx.label,
    )
    outputs = [train, validation, bsp_train, bsp_test, manifest, games_manifest]
    return [
        DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs)),
        ChessGamesInfo(bsp_train = bsp_train, bsp_test = bsp_test),
    ]

ChessGamesInfo = provider(
    doc = "A chess_games dataset's BSP evaluation games (MoE-X arXiv:2503.07639 App. B.3).",
    fields = {"bsp_train": "File: bsp_train.jsonl, D_train", "bsp_test": "File: bsp_test.jsonl, D_test"},
)

chess_games = rule(
    implementation = _chess_games_impl,
    doc = "train/ and validation/ token shards, bsp_train.jsonl, bsp_test.jsonl, manifests.",
    attrs = {
        "train_games": attr.int(mandatory = True),
        "validation_games": attr.int(mandatory = True),
        "bsp_games": attr.int(mandatory = True, doc = "Games in each of BSP-train and BSP-test."),
        "seed": attr.int(default = 1),
        "random_fraction": attr.string(default = "0.8"),
        "levels": attr.string_list(default = ["64:200", "256:100", "1024:50"]),
        "max_plies": attr.int(default = 80),
        "engine": attr.string(default = "/usr/games/stockfish"),
        "pgn_extract": attr.string(default = "/usr/games/pgn-extract"),
        "_generate": attr.label(default = "//datasets/chess:generate_games", executable = True, cfg = "target"),
        "_build": attr.label(default = "//datasets/chess:build_chess_dataset", executable = True, cfg = "target"),
    },
)
