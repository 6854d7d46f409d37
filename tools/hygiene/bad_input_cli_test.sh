#!/usr/bin/env bash
# Every binary, given a bad flag or a bad input that this test makes itself, prints exactly one stderr line
# "<program>: error: <message>", exits 1 (no crash signal, no hang) and leaves nothing at its output path.
# Arguments: the binaries, "--", then the fixture for the cases that need a real model: a tiny config,
# the token-shard directory, the tokenizer and shards of another tokenizer (runfiles paths).
set -u
declare -A bin
while [[ $# -gt 0 && "$1" != "--" ]]; do
  bin[$(basename "$1")]="$1"
  shift
done
shift
config="$1" shards="$TEST_SRCDIR/sparse_layers/$2" tokenizer="$TEST_SRCDIR/sparse_layers/$3"
other_shards="$TEST_SRCDIR/sparse_layers/$4"
work="$TEST_TMPDIR/bad_input"
mkdir -p "$work"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect PROGRAM OUTPUT MESSAGE ARGS...: the run of PROGRAM with ARGS fails as promised, its one line
# contains MESSAGE, and OUTPUT (a file or directory; "-" for none) does not exist afterwards.
expect() {
  local program="$1" output="$2" message="$3"
  shift 3
  timeout 120 "${bin[$program]}" "$@" >"$work/stdout" 2>"$work/stderr"
  local status=$? lines line
  lines="$(wc -l <"$work/stderr")"
  line="$(head -n 1 "$work/stderr")"
  echo "$program $*: exit $status: $line"
  if [[ $status -ne 1 ]]; then
    fail "$program $*: exit status $status, expected 1 (124: hang, >128: signal)"
  elif [[ "$lines" -ne 1 ]]; then
    fail "$program $*: $lines stderr lines, expected 1:"$'\n'"$(cat "$work/stderr")"
  elif [[ "$line" != "$program: error: "*"$message"* ]]; then
    fail "$program $*: '$line' is not '$program: error: ...$message...'"
  fi
  if [[ "$output" != "-" && -e "$output" ]]; then
    fail "$program $*: left $output behind"
  fi
  rm -rf "$output"
}

# Inputs: a tiny trained model, labelled texts, chess games without FENs, a fake UCI engine.
printf 'budget { max_steps: 2 }\neval { every_steps: 2 batches: 1 sample_tokens: 0 }\n' >"$work/short.textproto"
"${bin[train]}" --config="$config,$work/short.textproto" \
  --train_data="$shards/train/train.tokens.textproto" \
  --validation_data="$shards/validation/validation.tokens.textproto" \
  --out="$work/lm.pt" 2>"$work/train.log" || { cat "$work/train.log" >&2; exit 1; }
for i in $(seq 1 12); do
  echo "{\"text\": \"text number $i of the tiny probing set, long enough\", \"label\": \"l$((i % 2))\"}"
done >"$work/texts.jsonl"
echo '{"text": ";1.e4 e5 2.Nf3", "index": "0"}' >"$work/no_fens.jsonl"
printf '#!/bin/sh\nexec cat\n' >"$work/echo_engine"
chmod +x "$work/echo_engine"
touch "$work/empty.pgn" "$work/empty.textproto"
tokens="$shards/test/test.tokens.textproto"
out="$work/out"

# The reported crashes: segfaults, a protobuf FATAL, a length_error, SIGPIPE and a hang.
expect sparse_probe "$out" "--layer 99: the base model has 2 blocks" \
  --base="$work/lm.pt" --tokenizer="$tokenizer" --data="$work/texts.jsonl" --layer=99 --out="$out" \
  --densities_out="$out"
expect steer "$out" "--samples must be >= 1, got 0" \
  --base="$work/lm.pt" --tokenizer="$tokenizer" --tokens="$tokens" --samples=0 --out="$out"
expect evaluate_bsp "$out" "game 0 has no FENs" \
  --config="$config" --bsp_train="$work/no_fens.jsonl" --bsp_test="$work/no_fens.jsonl" --out="$out"
expect evaluate_bsp "$out" "--training_percent must be in [0, 100] (0 for --config's random initialisation), got 50" \
  --config="$config" --bsp_train="$work/no_fens.jsonl" --bsp_test="$work/no_fens.jsonl" --out="$out" \
  --training_percent=50
expect build_chess_dataset "$out" "--train_games must be >= 0, got -1" \
  --pgn="$work/empty.pgn" --games_manifest="$work/empty.textproto" --train_games=-1 --out_dir="$out"
expect generate_games "$out" "cannot run the UCI engine /nonexistent: No such file or directory" \
  --engine=/nonexistent --games=2 --out="$out" --manifest="$out"
expect generate_games "$out" "did not answer within 500ms" --engine="$work/echo_engine" \
  --engine_timeout_seconds=0.5 --games=2 --out="$out" --manifest="$out"
expect evaluate_replacements "$out" "--rows must be >= 1, got 0" \
  --base="$work/lm.pt" --tokens="$tokens" --activations="$tokens" --rows=0 --out="$out" --unit_frequencies_out="$out"

# An exception from a layer constructor (heads that do not divide the width) is one line too.
sed 's/n_heads: 2/n_heads: 3/' "$config" >"$work/three_heads.textproto"
expect evaluate_bsp "$out" "" \
  --config="$work/three_heads.textproto" --bsp_train="$work/no_fens.jsonl" --bsp_test="$work/no_fens.jsonl" \
  --out="$out"

# Flags out of range, missing or naming no file: one case per binary.
expect build_probing_sets "$out" "--passage_chars must be >= 1, got 0" \
  --corpus="$work/texts.jsonl" --out_dir="$out" --passage_chars=0
expect build_probing_sets "$out" "--brown_cats: /nonexistent/cats.txt is not a readable file" \
  --corpus="$work/texts.jsonl" --out_dir="$out" --brown_cats=/nonexistent/cats.txt
expect build_probing_sets "$out" "--max_per_pos_class must be >= 1, got 0" \
  --corpus="$work/texts.jsonl" --out_dir="$out" --max_per_pos_class=0
expect steer "$out" "--alpha_grid needs positive numbers, got 'x'" \
  --base="$work/lm.pt" --tokenizer="$tokenizer" --tokens="$tokens" --alpha_grid=1,x --out="$out" "$work/lm.pt"
expect steer "$out" "no fits given" \
  --base="$work/lm.pt" --tokenizer="$tokenizer" --tokens="$tokens" --out="$out"
expect encode_shards "$out" "--shard_tokens must be >= 1, got 0" \
  --input="$work/texts.jsonl" --split=train --tokenizer="$tokenizer" --out_dir="$out" --shard_tokens=0
expect train_tokenizer "$out.model" "--vocab_size must be in [260, 65536], got 10" \
  --input="$work/texts.jsonl" --out_prefix="$out" --vocab_size=10
expect prepare_corpus "$out" "need 0 < --validation_fraction" \
  --sources=local:"$work" --out_dir="$out" --validation_fraction=nan
expect cache_activations "$out" "--site attention: use ffn or attn" \
  --checkpoint="$work/lm.pt" --tokens="$tokens" --out_dir="$out" --site=attention
expect cache_activations "$out" "--layer 99 is not a block of the model" \
  --checkpoint="$work/lm.pt" --tokens="$tokens" --out_dir="$out" --layer=99
expect evaluate_lorsa "$out" "--batches must be >= 1, got 0" \
  --base="$work/lm.pt" --tokens="$tokens" --tokenizer="$tokenizer" --out_dir="$out" --batches=0
expect build_synthetic_documents "$out" "--tokenizer is required" --out="$out"
expect isoflop_frontier "$out" "--runs: $work/missing.csv is not a readable file" \
  --runs="$work/missing.csv" --runs_out="$out" --frontier_out="$out"
expect ladder_overlay - "--scale must be >= 0, got -1" --name=x --scale=-1
expect factual_recall "$out" "--brown_dir: $work/missing is not a directory" \
  --model="$work/lm.pt" --dense_model="$work/lm.pt" --tokenizer="$tokenizer" --facts="$work/texts.jsonl" \
  --brown_dir="$work/missing" --tokens="$tokens" --out_dir="$out"
expect build_fact_documents "$out" "--distractor_fraction must be in [0, 1], got 2" \
  --facts="$work/texts.jsonl" --out="$out" --distractor_fraction=2
expect check_config "$out" "config: $work is a directory, not a file" "$work" --out="$out"
expect training_throughput - "--steps must be >= 1, got 0" --steps=0
expect train "$out" "--config: $work/missing.textproto is not a readable file" \
  --config="$work/missing.textproto" --out="$out"
expect train "$out" "--resume continues --out, --resume_dir its own store: give one" \
  --config="$config,$work/short.textproto" --train_data="$shards/train/train.tokens.textproto" \
  --validation_data="$shards/validation/validation.tokens.textproto" --out="$out" --resume \
  --resume_dir="$work/resume_store"
expect train "$out" "--snapshots: '1.5:$work/late.pt' is not fraction:path, fraction in (0, 1)" \
  --config="$config,$work/short.textproto" --train_data="$shards/train/train.tokens.textproto" \
  --validation_data="$shards/validation/validation.tokens.textproto" --out="$out" \
  --snapshots="1.5:$work/late.pt"
cp "$work/lm.pt" "$work/parent.pt"
expect train - "--out $work/parent.pt is also an input ($work/parent.pt); write it elsewhere" \
  --config="$config,$work/short.textproto" --train_data="$shards/train/train.tokens.textproto" \
  --validation_data="$shards/validation/validation.tokens.textproto" --out="$work/parent.pt" \
  --init_from="$work/parent.pt"
cmp "$work/lm.pt" "$work/parent.pt" || fail "train replaced its --init_from"
# Each trainer binary runs its own objective: an activation cache belongs to fit, tokens to train.
expect train "$out" "--train_activations fits a replacement layer: run //pipelines/train:fit" \
  --config="$config,$work/short.textproto" --train_data="$shards/train/train.tokens.textproto" \
  --validation_data="$shards/validation/validation.tokens.textproto" --out="$out" \
  --train_activations="$config"
expect fit "$out" "fitting needs --train_activations (an activation cache)" \
  --config="$config,$work/short.textproto" --train_data="$shards/train/train.tokens.textproto" \
  --validation_data="$shards/validation/validation.tokens.textproto" --out="$out"
expect summary_table "$out" "summary or config: $work/missing is not a readable file" \
  --out="$out" --fields=steps "$work/missing"
expect activation_flow "$out" "--windows must be >= 1, got 0" \
  --models=a="$work/lm.pt" --tokens="$tokens" --out_dir="$out" --windows=0
mkdir -p "$work/corpus"
printf '{"source":"x","text":"a b"}\n{"source":"y","text":"c d"}\n' >"$work/corpus/test.jsonl"
expect router_domains "$out" "--tokens_per_domain must be >= 4, got 2" \
  --models=a="$work/lm.pt" --corpus_dir="$work/corpus" --tokenizer="$tokenizer" --out_dir="$out" \
  --tokens_per_domain=2
expect router_domains "$out" "$work/corpus/validation.jsonl" \
  --models=a="$work/lm.pt" --corpus_dir="$work/corpus" --split=validation --tokenizer="$tokenizer" \
  --out_dir="$out"
expect ffn_ablation "$out" "--batch_size must be >= 1, got -3" \
  --base="$work/lm.pt" --tokens="$tokens" --out="$out" --batch_size=-3
expect judge_claims "$out" "--min_n takes a whole number >= 0" --min_n=-1 --verify "$out"
expect export_activations "$work/exported" "--activations: $work/missing.textproto is not a readable file" \
  --activations="$work/missing.textproto" --out_dir="$work/exported"
expect export_fit "$out" "$work/lm.pt has no sparse replacement layer" --checkpoint="$work/lm.pt" --out="$out"
mkdir -p "$work/hf_empty"
expect import_saelens "$out" "$work/hf_empty/cfg.json" --sae_dir="$work/hf_empty" --base="$work/lm.pt" --out="$out"
expect hf_forward "$out" "cannot open $work/hf_empty/config.json" --checkpoint="$work/hf_empty" --tokens=1,2 \
  --out="$out"
expect import_pretrained "$out" "cannot open $work/hf_empty/config.json" --from="$work/hf_empty" --out="$out" \
  --config_out="$work/imported.textproto" --manifest_out="$work/imported.manifest.textproto"
expect import_pretrained "$out" "--config_out is required" --from="$work/hf_empty" --out="$out" \
  --manifest_out="$work/imported.manifest.textproto"

# Well-formed but wrong: pairings of another tokenizer, a facts table without its header, a shard header
# whose count overflows the size check (it crashed the reader), a sample of another vocabulary.
expect train "$out" "were encoded with different tokenizers: tokenizer_sha256" \
  --config="$config,$work/short.textproto" --train_data="$shards/train/train.tokens.textproto" \
  --validation_data="$other_shards/validation/validation.tokens.textproto" --out="$out"
expect steer "$out" "was encoded with the tokenizer of SHA-256" \
  --base="$work/lm.pt" --tokenizer="$tokenizer" --tokens="$other_shards/test/test.tokens.textproto" \
  --out="$out" "$work/lm.pt"
printf 'Austin,Texas\nDover,Delaware\nSalem,Oregon\n' >"$work/headless.csv"
mkdir -p "$work/brown"
expect factual_recall "$out" "$work/headless.csv: header 'Austin,Texas' needs an answer column" \
  --model="$work/lm.pt" --dense_model="$work/lm.pt" --tokenizer="$tokenizer" --facts="$work/headless.csv" \
  --brown_dir="$work/brown" --tokens="$tokens" --out_dir="$out"
mkdir -p "$work/overflow"
{
  printf 'SLTOKv1\0\0\2\0\0\0\0\0\0'                     # magic, vocabulary 512, uint16 ids
  printf '\4\0\0\0\0\0\0\200\0\0\0\0\0\0\0\0'         # 2^63 + 4 tokens: x 2 bytes wraps to 8
  printf '\1\0\1\0\1\0\1\0'
} >"$work/overflow/train_000.bin"
printf 'split: "train"\nvocab_size: 512\ntokens: -9223372036854775804\nshards { file: "train_000.bin" tokens: -9223372036854775804 sha256: "%s" }\n' \
  "$(sha256sum <"$work/overflow/train_000.bin" | cut -d' ' -f1)" >"$work/overflow/train.tokens.textproto"
expect train "$out" "header says 9223372036854775812 tokens of 2 bytes but the file has 40 bytes" \
  --config="$config,$work/short.textproto" --train_data="$work/overflow/train.tokens.textproto" \
  --validation_data="$work/overflow/train.tokens.textproto" --out="$out"
printf 'name: "lm" sample_ids: x\n' >"$work/garbled.summary.textproto"
expect decode_sample "$out" "garbled.summary.textproto:1:" \
  --summary="$work/garbled.summary.textproto" --tokenizer="$tokenizer" --out="$out"
printf 'name: "lm" sample_prompt_ids: 1 sample_ids: 99999\n' >"$work/foreign.summary.textproto"
expect decode_sample "$out" "lm: sample token id 99999 is outside the tokenizer's" \
  --summary="$work/foreign.summary.textproto" --tokenizer="$tokenizer" --out="$out"

# A UCI engine whose search answers a move its own move list calls illegal (it stalled the next search).
cat >"$work/illegal_engine" <<'ENGINE'
#!/bin/sh
while read -r line; do
  case "$line" in
    uci) echo "id name Illegal"; echo "uciok" ;;
    isready) echo "readyok" ;;
    "go perft 1") echo "e2e4: 1"; echo ""; echo "Nodes searched: 1" ;;
    go*) echo "info depth 1 multipv 1 score cp 10 pv e7e5"; echo "bestmove e7e5" ;;
    quit) exit 0 ;;
  esac
done
ENGINE
chmod +x "$work/illegal_engine"
expect generate_games "$out" "the UCI engine answered 'e7e5', not a legal move after 0 plies (the start position)" \
  --engine="$work/illegal_engine" --games=1 --workers=1 --random_fraction=0 --max_opening_plies=0 \
  --engine_timeout_seconds=5 --out="$out" --manifest="$out"

# Token shards of a 9,000-piece vocabulary fed to the 8,192-row model (it failed in LibTorch: "index out of
# range in self").
mkdir -p "$work/wide"
{
  printf 'SLTOKv1\0\50\43\0\0\0\0\0\0'                   # magic, vocabulary 9000, uint16 ids
  printf '\0\4\0\0\0\0\0\0\0\0\0\0\0\0\0\0'           # 1024 tokens
  for _ in $(seq 1024); do printf '\64\41'; done                # id 8500
} >"$work/wide/test_000.bin"
printf 'split: "test"\nvocab_size: 9000\ntokens: 1024\nshards { file: "test_000.bin" tokens: 1024 sha256: "%s" }\n' \
  "$(sha256sum <"$work/wide/test_000.bin" | cut -d' ' -f1)" >"$work/wide/test.tokens.textproto"
expect ffn_ablation "$out" "holds ids of a 9000-piece vocabulary, but $work/lm.pt embeds only 8192" \
  --base="$work/lm.pt" --tokens="$work/wide/test.tokens.textproto" --out="$out"

# Chess data that is not what it claims: a games manifest that does not parse (protobuf printed an ERROR line
# and the build went on), a comment that is not a FEN, and an illegal move.
printf '[Event "0"]\n[Round "random"]\n\n1. e4 { rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1 } *\n' \
  >"$work/one.pgn"
echo 'games: oops' >"$work/bad_games.textproto"
expect build_chess_dataset "$out" "$work/bad_games.textproto:1:" \
  --pgn="$work/one.pgn" --games_manifest="$work/bad_games.textproto" --train_games=0 --out_dir="$out"
printf '[Event "0"]\n[Round "random"]\n\n1. e4 { a fine move } *\n' >"$work/comment.pgn"
expect build_chess_dataset "$out" "game 0: 'a fine move' is not a FEN: 3 fields, not 6" \
  --pgn="$work/comment.pgn" --games_manifest="$work/empty.textproto" --train_games=0 --out_dir="$out"
# Well-formed but illegal: a pawn two squares past its reach, with the FEN it would give.
printf '[Event "0"]\n[Round "random"]\n\n1. e5 { rnbqkbnr/pppppppp/8/4P3/8/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1 } *\n' \
  >"$work/illegal.pgn"
expect build_chess_dataset "$out" "game 0: ply 1 'e5' is not a legal move in rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR" \
  --pgn="$work/illegal.pgn" --games_manifest="$work/empty.textproto" --train_games=0 --out_dir="$out"

# Empty inputs, an output naming an input, and no fit: errors, not empty tables.
: >"$work/empty.jsonl"
expect encode_shards "$out" "$work/empty.jsonl: no documents (a split needs at least 1)" \
  --input="$work/empty.jsonl" --split=train --tokenizer="$tokenizer" --out_dir="$out"
expect evaluate_replacements "$out" "no fits given: evaluate_replacements needs at least one fitted layer" \
  --base="$work/lm.pt" --tokens="$tokens" --activations="$tokens" --out="$out" --unit_frequencies_out="$out"
expect output_faithfulness "$out" "no fits given: output_faithfulness needs at least one fitted layer" \
  --base="$work/lm.pt" --tokens="$tokens" --out="$out" --prefix_match_out="$out"
expect output_faithfulness "$out" "--examples_out and --tokenizer go together" \
  --base="$work/lm.pt" --tokens="$tokens" --out="$out" --prefix_match_out="$out" --examples_out="$out"
expect expert_tokens "$out" "no fits given: expert_tokens needs at least one fitted layer" \
  --base="$work/lm.pt" --tokens="$tokens" --tokenizer="$tokenizer" --out="$out" --listing_out="$out"
expect expert_encoder_map "$out" "has no mixture-of-experts block: no expert encoders" \
  --checkpoint="$work/lm.pt" --name=dense --out="$out"
cp "$work/lm.pt" "$work/keep.pt"
expect expert_encoder_map - "--map_out $work/./keep.pt is also an input ($work/keep.pt); write it elsewhere" \
  --checkpoint="$work/keep.pt" --name=dense --out="$out" --map_out="$work/./keep.pt"
cmp -s "$work/lm.pt" "$work/keep.pt" || fail "expert_encoder_map overwrote its input"
expect export_fit - "--out $work/./keep.pt is also an input ($work/keep.pt); write it elsewhere" \
  --checkpoint="$work/keep.pt" --out="$work/./keep.pt"
cmp -s "$work/lm.pt" "$work/keep.pt" || fail "export_fit overwrote its input"
printf 'name: "a" steps: 1\n' >"$work/a.summary.textproto"
cp "$work/a.summary.textproto" "$work/a.keep"
expect summary_table - "--out $work/a.summary.textproto is also an input" \
  --out="$work/a.summary.textproto" --fields=steps "$work/a.summary.textproto"
cmp -s "$work/a.summary.textproto" "$work/a.keep" || fail "summary_table overwrote its input"

if [[ $failures -gt 0 ]]; then
  echo "$failures failures" >&2
  exit 1
fi
echo "PASS"
