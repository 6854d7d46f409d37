// decode_sample: a training summary's sample continuation as text.
//
//   decode_sample --summary=lm.summary.textproto --tokenizer=bpe.model
//       --out=lm.sample.txt
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"
#include "base/common/text_proto.h"
#include "datasets/text/tokenizer.h"
#include "pipelines/train/sample_text.h"
#include "pipelines/train/training.pb.h"

ABSL_FLAG(std::string, summary, "", "Trainer summary textproto");
ABSL_FLAG(std::string, tokenizer, "",
          "Tokenizer of the model's data (SentencePiece model, .chars "
          "vocabulary or GPT-2 BPE)");
ABSL_FLAG(std::string, out, "", "Text file: <prompt>|<continuation>");

namespace sparse_layers::train {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(
      FirstError({RequiredFile(FLAGS_summary), RequiredFile(FLAGS_tokenizer),
                  RequiredFlag(FLAGS_out)}));
  const std::string summary_path = absl::GetFlag(FLAGS_summary);
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(summary_path));
  TrainingSummary summary;
  RETURN_IF_ERROR(ParseTextProto(text, summary_path, &summary));
  std::string error;
  auto tokenizer =
      datasets::Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (tokenizer == nullptr) return absl::InvalidArgumentError(error);
  ASSIGN_OR_RETURN(const std::string sample, SampleText(summary, *tokenizer));
  return WriteFileAtomically(absl::GetFlag(FLAGS_out), sample);
}

}  // namespace
}  // namespace sparse_layers::train

int main(int argc, char** argv) {
  sparse_layers::ParseMainFlags(argc, argv,
                                "Decodes a training summary's sample as text.");
  return sparse_layers::RunMain(sparse_layers::train::Run);
}
