// train_tokenizer: a SentencePiece BPE model (byte fallback) trained on the
// lines of a training split (datasets/text/tokenizer_training.h); writes
// <out_prefix>.model, .vocab and .manifest.textproto.
//
//   train_tokenizer --input=train.jsonl --out_prefix=bpe --vocab_size=8192
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "base/common/main.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/tokenizer_training.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, input, "", "Training split (JSONL documents)");
ABSL_FLAG(std::string, out_prefix, "", "Output prefix: <prefix>.model etc.");
ABSL_FLAG(int, vocab_size, 8192, "Vocabulary size (including byte pieces)");
ABSL_FLAG(int, max_sentences, 300000,
          "At most this many lines, evenly strided over the split (0 = all)");

namespace sparse_layers::datasets {
namespace {

absl::Status Run() {
  // 256 byte pieces and 3 specials come first; shards store ids as uint16.
  RETURN_IF_ERROR(
      FirstError({RequiredFile(FLAGS_input), RequiredFlag(FLAGS_out_prefix),
                  FlagInRange(FLAGS_vocab_size, 260, 65536),
                  FlagAtLeast(FLAGS_max_sentences, 0)}));
  TokenizerTrainingOptions options;
  options.input = absl::GetFlag(FLAGS_input);
  options.out_prefix = absl::GetFlag(FLAGS_out_prefix);
  options.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  options.max_sentences = absl::GetFlag(FLAGS_max_sentences);
  StagedOutputs outputs;
  RETURN_IF_ERROR(TrainTokenizer(options, outputs));
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(
      argc, argv, "Trains a SentencePiece BPE tokenizer on a JSONL split.");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
