// Training the project's SentencePiece BPE tokenizer (byte fallback) on the
// lines of a training split: the documents' lines, cut below SentencePiece's
// line limit, evenly strided to a budget, and the trainer's arguments, which
// keep decode(encode(x)) == x. Writes <prefix>.model, .vocab and
// .manifest.textproto (a TokenizerManifest).
#ifndef SPARSE_LAYERS_DATASETS_TEXT_TOKENIZER_TRAINING_H_
#define SPARSE_LAYERS_DATASETS_TEXT_TOKENIZER_TRAINING_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "base/common/staged_outputs.h"

namespace sparse_layers::datasets {

// SentencePiece skips lines longer than its max_sentence_length (4192 bytes):
// long paragraphs are cut at spaces into pieces below this.
inline constexpr size_t kMaxSentenceBytes = 4000;

// Appends the lines of `text` to `lines`, each stripped of ASCII whitespace
// and empty ones dropped. A line longer than `max_bytes` is cut at its last
// space within the first `max_bytes` bytes (at `max_bytes` when there is
// none), moved back to the start of a UTF-8 sequence, and the rest, stripped
// of leading whitespace, is cut the same way.
void AppendSentenceLines(absl::string_view text,
                         std::vector<std::string>& lines,
                         size_t max_bytes = kMaxSentenceBytes);

// Keeps at most `limit` of `lines` (0 = all): line i * total / limit for
// i < limit, deterministic and spread over all sources. Returns the rule as
// the manifest records it: "all lines" or "line i*<total>/<limit> for i <
// <limit>".
std::string StrideSentenceLines(std::vector<std::string>& lines, size_t limit);

// SentencePieceTrainer's command line: BPE with byte fallback, identity
// normalisation and kept whitespace, digits split, the input in file order on
// one thread, unk/bos/eos = 0/1/2 and no pad.
std::string SentencePieceTrainerArguments(const std::string& sentences_path,
                                          const std::string& model_prefix,
                                          int vocab_size);

struct TokenizerTrainingOptions {
  std::string input;       // Training split (JSONL documents).
  std::string out_prefix;  // <prefix>.model, .vocab, .manifest.textproto.
  int vocab_size = 8192;   // Including the 256 byte pieces and 3 specials.
  int64_t max_sentences = 300000;  // Lines given to the trainer (0 = all).
};

// Stages and writes the model, vocabulary and manifest in `outputs`; the
// caller commits. Temporary files <prefix>.sentences.tmp and
// <prefix>.tmp.{model,vocab} (SentencePiece records its paths in the model,
// so they must not depend on the pid) are removed or renamed.
absl::Status TrainTokenizer(const TokenizerTrainingOptions& options,
                            StagedOutputs& outputs);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_TOKENIZER_TRAINING_H_
