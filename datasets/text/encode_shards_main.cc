// encode_shards: tokenizes a JSONL split with a tokenizer (Tokenizer::Load)
// into token shards (documents separated by the end-of-text id; uint16 ids,
// uint32 above 65,536 pieces) and a manifest.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "datasets/text/corpus_readers.h"
#include "datasets/text/token_shards.h"
#include "datasets/text/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "ops/backend/torch_init.h"

ABSL_FLAG(std::string, input, "", "A JSONL split");
ABSL_FLAG(std::string, split, "", "Split name recorded in the manifest");
ABSL_FLAG(std::string, tokenizer, "",
          "Tokenizer: SentencePiece model, .chars, or BPE file (vocab.json, "
          "tokenizer.json)");
ABSL_FLAG(std::string, out_dir, "",
          "Directory for <split>_NNN.bin and "
          "<split>.tokens.textproto");
ABSL_FLAG(int64_t, shard_tokens, int64_t{1} << 24, "Tokens per shard");

namespace sparse_layers::datasets {
namespace {

absl::Status Run() {
  const std::string split = absl::GetFlag(FLAGS_split);
  const std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  // A byte-level BPE tokenizer may be a directory (tokenizer.json, or GPT-2's
  // two files); its digest is then its vocabulary file's.
  std::error_code filesystem_error;
  const bool tokenizer_directory = std::filesystem::is_directory(
      absl::GetFlag(FLAGS_tokenizer), filesystem_error);
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_input), RequiredFlag(FLAGS_split),
       tokenizer_directory ? RequiredFlag(FLAGS_tokenizer)
                           : RequiredFile(FLAGS_tokenizer),
       RequiredFlag(FLAGS_out_dir), FlagAtLeast(FLAGS_shard_tokens, 1)}));
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer =
      Tokenizer::Load(absl::GetFlag(FLAGS_tokenizer), &error);
  if (tokenizer == nullptr) return absl::InvalidArgumentError(error);
  const int vocab_size = tokenizer->vocab_size();
  const int end_of_text = tokenizer->eos_id();
  if (end_of_text < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        absl::GetFlag(FLAGS_tokenizer),
        ": no end-of-text piece (token shards separate documents with it)"));
  }
  // Documents begin as the model saw them in training (Llama 3's
  // <|begin_of_text|>); GPT-2's and Pythia's have no such piece.
  const int begin_of_text = tokenizer->bos_id();
  ASSIGN_OR_RETURN(const std::string jsonl,
                   ReadFileToString(absl::GetFlag(FLAGS_input)));

  TokenShardManifest manifest;
  manifest.set_split(split);
  manifest.set_vocab_size(vocab_size);
  manifest.set_end_of_text_id(end_of_text);
  manifest.set_source_sha256(Sha256Hex(jsonl));
  ASSIGN_OR_RETURN(
      const std::string tokenizer_digest,
      Sha256OfFile(TokenizerDigestPath(absl::GetFlag(FLAGS_tokenizer))));
  manifest.set_tokenizer_sha256(tokenizer_digest);

  // Shards and manifest appear together, or (on an error) not at all.
  StagedOutputs outputs;
  ASSIGN_OR_RETURN(const std::string staged, outputs.StageDirectory(out_dir));
  TokenSplitWriter writer(staged, manifest, absl::GetFlag(FLAGS_shard_tokens));
  for (absl::string_view record :
       absl::StrSplit(jsonl, '\n', absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(const Document document, ParseJsonDocument(record));
    std::vector<int> ids = tokenizer->Encode(document.text());
    if (begin_of_text >= 0) ids.insert(ids.begin(), begin_of_text);
    RETURN_IF_ERROR(writer.AddDocument(ids, /*end_of_text=*/true));
  }
  ASSIGN_OR_RETURN(const TokenShardManifest written, writer.Finish());
  // An empty split would train and evaluate on nothing, silently.
  if (written.documents() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::GetFlag(FLAGS_input),
                     ": no documents (a split needs at least 1)"));
  }
  RETURN_IF_ERROR(outputs.Commit());
  std::fprintf(stderr,
               "encode_shards: %s: %lld documents, %lld tokens, %d shards\n",
               split.c_str(), static_cast<long long>(written.documents()),
               static_cast<long long>(written.tokens()), written.shards_size());
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Encodes a JSONL split into token shards.");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
