// import_pretrained: a Hugging Face model directory as this project's base
// model: checkpoint (.pt, read by every analysis), config (an
// experiment_config base), manifest (SHA-256 of each source file) and its
// byte-level BPE tokenizer files (GPT-2's, or tokenizer.json).
// //pipelines/pretrained runs it on --repo_env=HF_MODEL.
//
//   import_pretrained --from=/models/gpt2 --out=gpt2.pt
//     --config_out=gpt2.textproto --manifest_out=gpt2.manifest.textproto
//     --tokenizer_out=gpt2_tokenizer
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"
#include "ops/backend/torch_init.h"
#include "pipelines/pretrained/pretrained_import.h"

ABSL_FLAG(std::string, from, "",
          "Hugging Face model directory (config.json, model.safetensors).");
ABSL_FLAG(std::string, out, "", "Output checkpoint (.pt).");
ABSL_FLAG(std::string, config_out, "", "Output config (.textproto).");
ABSL_FLAG(std::string, manifest_out, "", "Output manifest (.textproto).");
ABSL_FLAG(std::string, tokenizer_out, "",
          "Directory for the tokenizer files (vocab.json and merges.txt, "
          "or tokenizer.json); unset: none.");
ABSL_FLAG(int64_t, max_context, 1024, "Positions kept.");
ABSL_FLAG(int64_t, sequence_length, 128,
          "Token window of the experiments (data.sequence_length).");

namespace sparse_layers::datasets {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(FirstError({RequiredFlag(FLAGS_from), RequiredFlag(FLAGS_out),
                              RequiredFlag(FLAGS_config_out),
                              RequiredFlag(FLAGS_manifest_out),
                              FlagInRange(FLAGS_max_context, 1, 1 << 16),
                              FlagInRange(FLAGS_sequence_length, 1, 1 << 16)}));
  PretrainedImportOptions options;
  options.source = absl::GetFlag(FLAGS_from);
  options.max_context_length = absl::GetFlag(FLAGS_max_context);
  options.sequence_length = absl::GetFlag(FLAGS_sequence_length);
  ASSIGN_OR_RETURN(const PretrainedImport imported, ImportPretrained(options));
  RETURN_IF_ERROR(WritePretrainedImport(
      options, imported, absl::GetFlag(FLAGS_out),
      absl::GetFlag(FLAGS_config_out), absl::GetFlag(FLAGS_manifest_out),
      absl::GetFlag(FLAGS_tokenizer_out)));
  const config::ModelConfig& model = imported.config.model();
  std::fprintf(stderr,
               "import_pretrained: %s (%s, %d layers, d_model %d, vocabulary "
               "%d) from %zu files\n",
               options.source.c_str(), imported.model_type.c_str(),
               model.n_layers(), model.d_model(), model.vocab_size(),
               imported.files.size());
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Imports a Hugging Face model as a base model.");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
