// A pretrained checkpoint (a Hugging Face model directory, or a nanoGPT
// ckpt.pt such as Karvonen's chess models) turned into this
// project's own checkpoint and config, so every analysis that loads a trained
// base model (LoadModel) takes it unchanged, and a manifest records the
// SHA-256 of every source file it was made from.
#ifndef SPARSE_LAYERS_PIPELINES_PRETRAINED_PRETRAINED_IMPORT_H_
#define SPARSE_LAYERS_PIPELINES_PRETRAINED_PRETRAINED_IMPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/experiment.pb.h"
#include "models/gpt.h"

namespace sparse_layers::datasets {

struct PretrainedImportOptions {
  // A Hugging Face model directory, or a nanoGPT ckpt.pt file (meta.pkl, its
  // character vocabulary, beside it).
  std::string source;
  // Positions kept (the causal mask is context^2 floats per layer).
  int64_t max_context_length = 1024;
  // Windows the experiments read: 128 tokens, as MxD's released code
  // (arXiv:2505.21364 App. C); never above the context.
  int64_t sequence_length = 128;
};

// The tokenizer file WritePretrainedImport writes for a nanoGPT model.
inline constexpr char kCharsVocabulary[] = "vocabulary.chars";

struct SourceFile {
  std::string name;  // Relative to the source directory.
  int64_t bytes = 0;
  std::string sha256;
};

struct PretrainedImport {
  std::string model_type;                  // config.json's model_type.
  config::ExperimentConfig config;         // model and data; runtime seed 0.
  std::shared_ptr<layers::GptImpl> model;  // In eval mode.
  std::vector<SourceFile> files;           // What was read, by name.
  std::string meta_pkl;  // A nanoGPT model's meta.pkl, when beside it.
};

// The files of `dir` a model is read from: config.json, the safetensors
// files and their index, and the tokenizer's files, sorted by name.
absl::StatusOr<std::vector<SourceFile>> HashSourceFiles(const std::string& dir);

absl::StatusOr<PretrainedImport> ImportPretrained(
    const PretrainedImportOptions& options);

// The manifest: source, model_type, context and one `file { name bytes sha256
// }` per source file (text format).
std::string ManifestText(const PretrainedImportOptions& options,
                         const PretrainedImport& imported);

// Writes the checkpoint (LoadModel reads it; step 0, no optimiser state), the
// config text (an experiment_config base) and the manifest; when
// `tokenizer_dir` is not empty, writes the tokenizer there, after checking
// that its vocabulary fits the model's: GPT-2's files (vocab.json,
// merges.txt), else tokenizer.json (Pythia, Llama 3: byte-level BPE), or a
// nanoGPT model's meta.pkl as vocabulary.chars (';', the chess games'
// delimiter, as end of sequence).
absl::Status WritePretrainedImport(const PretrainedImportOptions& options,
                                   const PretrainedImport& imported,
                                   const std::string& checkpoint_path,
                                   const std::string& config_path,
                                   const std::string& manifest_path,
                                   const std::string& tokenizer_dir);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_PIPELINES_PRETRAINED_PRETRAINED_IMPORT_H_
