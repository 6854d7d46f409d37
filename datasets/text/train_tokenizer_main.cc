// train_tokenizer: a SentencePiece BPE model (byte fallback) trained on the
// lines of a training split; writes <out_prefix>.model, .vocab and
// .manifest.textproto.
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "datasets/text/corpus_readers.h"
#include "datasets/text/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "layers/backend/torch_init.h"
#include "tools/common/digest.h"
#include "tools/common/file_io.h"
#include "tools/common/staged_outputs.h"

ABSL_FLAG(std::string, input, "", "Training split (JSONL documents)");
ABSL_FLAG(std::string, out_prefix, "", "Output prefix: <prefix>.model etc.");
ABSL_FLAG(int, vocab_size, 8192, "Vocabulary size (including byte pieces)");
ABSL_FLAG(int, max_sentences, 300000,
          "At most this many lines, evenly strided over the split (0 = all)");

namespace sparse_layers::datasets {
namespace {

// SentencePiece skips lines longer than its max_sentence_length (4192 bytes):
// long paragraphs are cut at spaces into pieces below this.
constexpr size_t kMaxLineBytes = 4000;

void AppendLines(absl::string_view text, std::vector<std::string>& lines) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    while (!line.empty()) {
      size_t cut = line.size();
      if (cut > kMaxLineBytes) {
        cut = line.rfind(' ', kMaxLineBytes);
        if (cut == absl::string_view::npos || cut == 0) cut = kMaxLineBytes;
        // Never cut inside a UTF-8 sequence.
        while (cut > 0 &&
               (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) {
          --cut;
        }
      }
      lines.emplace_back(line.substr(0, cut));
      line = absl::StripLeadingAsciiWhitespace(line.substr(cut));
    }
  }
}

absl::Status Run() {
  const std::string input = absl::GetFlag(FLAGS_input);
  const std::string prefix = absl::GetFlag(FLAGS_out_prefix);
  const int vocab_size = absl::GetFlag(FLAGS_vocab_size);
  // 256 byte pieces and 3 specials come first; shards store ids as uint16.
  if (absl::Status s =
          FirstError({RequiredFile(FLAGS_input), RequiredFlag(FLAGS_out_prefix),
                      FlagInRange(FLAGS_vocab_size, 260, 65536),
                      FlagAtLeast(FLAGS_max_sentences, 0)});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> jsonl = ReadFileToString(input);
  if (!jsonl.ok()) return jsonl.status();
  std::vector<std::string> lines;
  for (absl::string_view record :
       absl::StrSplit(*jsonl, '\n', absl::SkipEmpty())) {
    absl::StatusOr<Document> document = ParseJsonDocument(record);
    if (!document.ok()) return document.status();
    AppendLines(document->text(), lines);
  }
  const size_t limit = absl::GetFlag(FLAGS_max_sentences);
  const size_t total = lines.size();
  std::string sentence_rule = "all lines";
  if (limit > 0 && total > limit) {
    // Every (total/limit)-th line: deterministic, and spread over all sources.
    std::vector<std::string> strided;
    for (size_t i = 0; i < limit; ++i) {
      strided.push_back(std::move(lines[i * total / limit]));
    }
    lines = std::move(strided);
    sentence_rule =
        absl::StrFormat("line i*%d/%d for i < %d", total, limit, limit);
  }

  // Model, vocabulary and manifest appear together or not at all.
  StagedOutputs outputs;
  absl::StatusOr<std::string> model = outputs.StageFile(prefix + ".model");
  if (!model.ok()) return model.status();
  absl::StatusOr<std::string> vocab = outputs.StageFile(prefix + ".vocab");
  if (!vocab.ok()) return vocab.status();
  // SentencePiece records its input and output paths in the model: they must
  // not depend on the pid.
  const std::string sentences_path = prefix + ".sentences.tmp";
  {
    std::ofstream out(sentences_path, std::ios::binary);
    for (const std::string& line : lines) out << line << '\n';
    if (!out) {
      std::remove(sentences_path.c_str());
      return absl::InternalError("cannot write " + sentences_path);
    }
  }
  const std::string temporary_prefix = prefix + ".tmp";
  // identity normalisation and kept whitespace: decode(encode(x)) == x.
  const std::string arguments = absl::StrCat(
      "--input=", sentences_path, " --model_prefix=", temporary_prefix,
      " --model_type=bpe --vocab_size=", vocab_size,
      " --byte_fallback=true --character_coverage=0.9995",
      " --normalization_rule_name=identity --remove_extra_whitespaces=false",
      " --split_digits=true --allow_whitespace_only_pieces=true",
      " --input_sentence_size=0 --shuffle_input_sentence=false",
      " --num_threads=1 --minloglevel=1",
      " --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1");
  std::string error;
  const bool trained = TrainSentencePiece(arguments, &error);
  std::remove(sentences_path.c_str());
  if (!trained) {
    return absl::InternalError(
        absl::StrCat("SentencePiece training failed: ", error));
  }
  for (const auto& [suffix, staged] :
       {std::pair{".model", *model}, std::pair{".vocab", *vocab}}) {
    if (std::rename((temporary_prefix + suffix).c_str(), staged.c_str()) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot rename ", temporary_prefix, suffix));
    }
  }

  TokenizerManifest manifest;
  manifest.set_model_type("bpe");
  manifest.set_vocab_size(vocab_size);
  manifest.set_byte_fallback(true);
  manifest.set_sentences(static_cast<int64_t>(lines.size()));
  manifest.set_sentence_rule(sentence_rule);
  manifest.set_source_sha256(Sha256Hex(*jsonl));
  absl::StatusOr<std::string> model_digest = Sha256OfFile(*model);
  if (!model_digest.ok()) return model_digest.status();
  manifest.set_sha256(*model_digest);
  manifest.set_unk_id(0);
  manifest.set_bos_id(1);
  manifest.set_eos_id(2);
  std::string text;
  google::protobuf::TextFormat::PrintToString(manifest, &text);
  if (absl::Status s = outputs.WriteFile(prefix + ".manifest.textproto", text);
      !s.ok()) {
    return s;
  }
  return outputs.Commit();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(
      argc, argv, "Trains a SentencePiece BPE tokenizer on a JSONL split.");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
