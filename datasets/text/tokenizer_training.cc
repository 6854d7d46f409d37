#include "datasets/text/tokenizer_training.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/common/digest.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "datasets/text/corpus.pb.h"
#include "datasets/text/corpus_readers.h"
#include "datasets/text/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace sparse_layers::datasets {

void AppendSentenceLines(absl::string_view text,
                         std::vector<std::string>& lines, size_t max_bytes) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    while (!line.empty()) {
      size_t cut = line.size();
      if (cut > max_bytes) {
        cut = line.rfind(' ', max_bytes);
        if (cut == absl::string_view::npos || cut == 0) cut = max_bytes;
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

std::string StrideSentenceLines(std::vector<std::string>& lines, size_t limit) {
  const size_t total = lines.size();
  if (limit == 0 || total <= limit) return "all lines";
  std::vector<std::string> strided;
  for (size_t i = 0; i < limit; ++i) {
    strided.push_back(std::move(lines[i * total / limit]));
  }
  lines = std::move(strided);
  return absl::StrFormat("line i*%d/%d for i < %d", total, limit, limit);
}

std::string SentencePieceTrainerArguments(const std::string& sentences_path,
                                          const std::string& model_prefix,
                                          int vocab_size) {
  return absl::StrCat(
      "--input=", sentences_path, " --model_prefix=", model_prefix,
      " --model_type=bpe --vocab_size=", vocab_size,
      " --byte_fallback=true --character_coverage=0.9995",
      " --normalization_rule_name=identity --remove_extra_whitespaces=false",
      " --split_digits=true --allow_whitespace_only_pieces=true",
      " --input_sentence_size=0 --shuffle_input_sentence=false",
      " --num_threads=1 --minloglevel=1",
      " --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1");
}

absl::Status TrainTokenizer(const TokenizerTrainingOptions& options,
                            StagedOutputs& outputs) {
  const std::string& prefix = options.out_prefix;
  ASSIGN_OR_RETURN(const std::string jsonl, ReadFileToString(options.input));
  std::vector<std::string> lines;
  for (absl::string_view record :
       absl::StrSplit(jsonl, '\n', absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(const Document document, ParseJsonDocument(record));
    AppendSentenceLines(document.text(), lines);
  }
  const std::string sentence_rule =
      StrideSentenceLines(lines, options.max_sentences);

  // Model, vocabulary and manifest appear together or not at all.
  ASSIGN_OR_RETURN(const std::string model,
                   outputs.StageFile(prefix + ".model"));
  ASSIGN_OR_RETURN(const std::string vocab,
                   outputs.StageFile(prefix + ".vocab"));
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
  std::string error;
  const bool trained = TrainSentencePiece(
      SentencePieceTrainerArguments(sentences_path, temporary_prefix,
                                    options.vocab_size),
      &error);
  std::remove(sentences_path.c_str());
  if (!trained) {
    return absl::InternalError(
        absl::StrCat("SentencePiece training failed: ", error));
  }
  for (const auto& [suffix, staged] :
       {std::pair{".model", model}, std::pair{".vocab", vocab}}) {
    if (std::rename((temporary_prefix + suffix).c_str(), staged.c_str()) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot rename ", temporary_prefix, suffix));
    }
  }

  TokenizerManifest manifest;
  manifest.set_model_type("bpe");
  manifest.set_vocab_size(options.vocab_size);
  manifest.set_byte_fallback(true);
  manifest.set_sentences(static_cast<int64_t>(lines.size()));
  manifest.set_sentence_rule(sentence_rule);
  manifest.set_source_sha256(Sha256Hex(jsonl));
  ASSIGN_OR_RETURN(const std::string model_digest, Sha256OfFile(model));
  manifest.set_sha256(model_digest);
  manifest.set_unk_id(0);
  manifest.set_bos_id(1);
  manifest.set_eos_id(2);
  std::string text;
  google::protobuf::TextFormat::PrintToString(manifest, &text);
  return outputs.WriteFile(prefix + ".manifest.textproto", text);
}

}  // namespace sparse_layers::datasets
