#include "pipelines/pretrained/pretrained_import.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/gpt2_bpe.h"
#include "datasets/text/nanogpt_vocabulary.h"
#include "google/protobuf/text_format.h"
#include "models/checkpoints/checkpoint.h"
#include "models/checkpoints/hf_checkpoint.h"
#include "models/checkpoints/nanogpt_checkpoint.h"

namespace sparse_layers::datasets {
namespace {

namespace fs = std::filesystem;

constexpr char kMetaPkl[] = "meta.pkl";

// What LoadHuggingFaceModel and the byte-level BPE tokenizer read (GPT-2's
// files, or tokenizer.json: Pythia, Llama 3); other files of a Hub download
// (PyTorch .bin, Flax, TF weights) are never read, so not hashed. Kept in step
// with hf_model.bzl's _is_source_file.
bool IsSourceFile(const std::string& name) {
  return name == "config.json" || absl::EndsWith(name, ".safetensors") ||
         absl::EndsWith(name, ".safetensors.index.json") ||
         name == Gpt2Bpe::kHuggingFaceEncoderFile ||
         name == Gpt2Bpe::kHuggingFaceMergesFile ||
         name == Gpt2Bpe::kTokenizerJsonFile;
}

absl::StatusOr<SourceFile> HashSourceFile(const fs::path& path) {
  std::error_code error;
  SourceFile file;
  file.name = path.filename().string();
  file.bytes = static_cast<int64_t>(fs::file_size(path, error));
  ASSIGN_OR_RETURN(file.sha256, Sha256OfFile(path.string()));
  return file;
}

bool HasSourceFile(const PretrainedImport& imported, absl::string_view name) {
  return std::any_of(imported.files.begin(), imported.files.end(),
                     [&](const SourceFile& file) { return file.name == name; });
}

}  // namespace

absl::StatusOr<std::vector<SourceFile>> HashSourceFiles(
    const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return absl::NotFoundError(
        absl::StrCat(dir,
                     ": not a directory (a Hugging Face model directory "
                     "holds config.json and model.safetensors)"));
  }
  std::vector<SourceFile> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!IsSourceFile(name) || !entry.is_regular_file(error)) continue;
    ASSIGN_OR_RETURN(SourceFile file, HashSourceFile(entry.path()));
    files.push_back(std::move(file));
  }
  if (error) {
    return absl::InternalError(absl::StrCat(dir, ": ", error.message()));
  }
  std::sort(
      files.begin(), files.end(),
      [](const SourceFile& a, const SourceFile& b) { return a.name < b.name; });
  return files;
}

absl::StatusOr<PretrainedImport> ImportPretrained(
    const PretrainedImportOptions& options) {
  if (options.max_context_length < 1 || options.sequence_length < 1) {
    return absl::InvalidArgumentError(
        "max_context_length and sequence_length must be >= 1");
  }
  PretrainedImport imported;
  std::error_code error;
  layers::HuggingFaceModel loaded;
  if (fs::is_regular_file(options.source, error)) {
    // A nanoGPT ckpt.pt, and the meta.pkl nanoGPT writes beside its data.
    for (const fs::path& path :
         {fs::path(options.source),
          fs::path(options.source).parent_path() / kMetaPkl}) {
      if (!fs::is_regular_file(path, error)) continue;
      ASSIGN_OR_RETURN(SourceFile file, HashSourceFile(path));
      imported.files.push_back(std::move(file));
      if (path.filename() == kMetaPkl) imported.meta_pkl = path.string();
    }
    ASSIGN_OR_RETURN(loaded, layers::LoadNanoGptCheckpoint(
                                 options.source, options.max_context_length));
  } else {
    ASSIGN_OR_RETURN(imported.files, HashSourceFiles(options.source));
    ASSIGN_OR_RETURN(loaded, layers::LoadHuggingFaceModel(
                                 options.source, options.max_context_length));
  }
  imported.model_type = loaded.model_type;
  imported.model = std::move(loaded.model);
  const layers::GptOptions& gpt = imported.model->options();
  ASSIGN_OR_RETURN(*imported.config.mutable_model(),
                   layers::ModelConfigFromGptOptions(gpt));
  imported.config.set_name(absl::StrCat("pretrained_", loaded.model_type));
  imported.config.set_description(
      absl::StrCat("Pretrained ", loaded.model_type, " from ", options.source,
                   " (import_pretrained; file digests in its manifest)"));
  imported.config.mutable_runtime()->set_seed(0);
  config::DataConfig& data = *imported.config.mutable_data();
  data.set_batch_size(8);
  data.set_sequence_length(
      std::min(options.sequence_length, gpt.context_length));
  return imported;
}

std::string ManifestText(const PretrainedImportOptions& options,
                         const PretrainedImport& imported) {
  std::string text = absl::StrCat(
      "# Written by import_pretrained: the files this base model was read "
      "from.\nsource: \"",
      absl::CEscape(options.source), "\"\nmodel_type: \"", imported.model_type,
      "\"\nmax_context_length: ", imported.config.model().context_length(),
      "\n");
  for (const SourceFile& file : imported.files) {
    absl::StrAppend(&text, "file { name: \"", absl::CEscape(file.name),
                    "\" bytes: ", file.bytes, " sha256: \"", file.sha256,
                    "\" }\n");
  }
  return text;
}

absl::Status WritePretrainedImport(const PretrainedImportOptions& options,
                                   const PretrainedImport& imported,
                                   const std::string& checkpoint_path,
                                   const std::string& config_path,
                                   const std::string& manifest_path,
                                   const std::string& tokenizer_dir) {
  // All outputs or none: a tokenizer that fails leaves no model behind.
  StagedOutputs outputs;
  layers::CheckpointState state;
  if (!google::protobuf::TextFormat::PrintToString(imported.config,
                                                   &state.config_text)) {
    return absl::InternalError("cannot print the imported config");
  }
  ASSIGN_OR_RETURN(const std::string staged_checkpoint,
                   outputs.StageFile(checkpoint_path));
  RETURN_IF_ERROR(layers::SaveCheckpoint(staged_checkpoint, *imported.model,
                                         /*optimizer=*/nullptr, state));
  RETURN_IF_ERROR(outputs.WriteFile(config_path, state.config_text));
  RETURN_IF_ERROR(
      outputs.WriteFile(manifest_path, ManifestText(options, imported)));
  if (tokenizer_dir.empty()) return outputs.Commit();
  ASSIGN_OR_RETURN(const std::string staged_tokenizer,
                   outputs.StageDirectory(tokenizer_dir));
  if (imported.model_type == "nanogpt") {
    if (imported.meta_pkl.empty()) {
      return absl::NotFoundError(
          absl::StrCat(options.source, ": no ", kMetaPkl,
                       " beside it (the character vocabulary nanoGPT writes)"));
    }
    ASSIGN_OR_RETURN(const std::string chars,
                     CharsVocabularyFromMetaPkl(imported.meta_pkl, ';'));
    const int64_t pieces = static_cast<int64_t>(chars.find('\n'));
    if (pieces > imported.config.model().vocab_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(imported.meta_pkl, ": ", pieces,
                       " characters, the model's embedding only ",
                       imported.config.model().vocab_size()));
    }
    RETURN_IF_ERROR(WriteFileAtomically(
        (fs::path(staged_tokenizer) / kCharsVocabulary).string(), chars));
    return outputs.Commit();
  }
  // GPT-2's two files where they are (Gpt2Bpe::Load reads them first), else
  // tokenizer.json.
  const bool gpt2_files =
      HasSourceFile(imported, Gpt2Bpe::kHuggingFaceEncoderFile);
  if (!gpt2_files && !HasSourceFile(imported, Gpt2Bpe::kTokenizerJsonFile)) {
    return absl::NotFoundError(absl::StrCat(
        options.source, ": no ", Gpt2Bpe::kHuggingFaceEncoderFile, " and ",
        Gpt2Bpe::kHuggingFaceMergesFile, ", nor ", Gpt2Bpe::kTokenizerJsonFile,
        " (a byte-level BPE tokenizer, the only kind read here)"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Gpt2Bpe> bpe, Gpt2Bpe::Load(options.source));
  if (bpe->vocab_size() > imported.config.model().vocab_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.source, ": the tokenizer has ", bpe->vocab_size(),
                     " pieces, the model's embedding only ",
                     imported.config.model().vocab_size()));
  }
  const std::vector<const char*> names =
      gpt2_files ? std::vector<const char*>{Gpt2Bpe::kHuggingFaceEncoderFile,
                                            Gpt2Bpe::kHuggingFaceMergesFile}
                 : std::vector<const char*>{Gpt2Bpe::kTokenizerJsonFile};
  for (const char* name : names) {
    ASSIGN_OR_RETURN(
        const std::string bytes,
        ReadFileToString((fs::path(options.source) / name).string()));
    RETURN_IF_ERROR(WriteFileAtomically(
        (fs::path(staged_tokenizer) / name).string(), bytes));
  }
  return outputs.Commit();
}

}  // namespace sparse_layers::datasets
