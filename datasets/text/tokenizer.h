// The project's SentencePiece boundary. SentencePiece's headers declare their
// own absl::string_view, which clashes with Debian's Abseil, so only
// tokenizer.cc includes them and this interface uses the standard library.
#ifndef SPARSE_LAYERS_DATASETS_TEXT_TOKENIZER_H_
#define SPARSE_LAYERS_DATASETS_TEXT_TOKENIZER_H_

#include <memory>
#include <string>
#include <vector>

namespace sparse_layers::datasets {

// SentencePiece's word-start marker U+2581 ("\u2581"), in UTF-8.
inline constexpr char kWordStart[] = "\xe2\x96\x81";

class Tokenizer {
 public:
  // Returns null and sets *error when the model cannot be loaded. A path
  // ending in ".chars" is a character vocabulary (line 1, ids in order; line
  // 2, the delimiter used as eos); a directory, or a file named encoder.json,
  // vocab.json or tokenizer.json, byte-level BPE (GPT-2's encoder.json and
  // vocab.bpe, or a Hugging Face tokenizer.json: gpt2_bpe.h); anything else a
  // SentencePiece model.
  static std::unique_ptr<Tokenizer> Load(const std::string& model_path,
                                         std::string* error);
  virtual ~Tokenizer() = default;

  virtual std::vector<int> Encode(const std::string& text) const = 0;
  virtual std::string Decode(const std::vector<int>& ids) const = 0;
  // The piece of one id ("▁the", "<0x0A>", "</s>").
  virtual std::string Piece(int id) const = 0;
  virtual int vocab_size() const = 0;
  virtual int eos_id() const = 0;
  // The piece put before every text (Llama 3's <|begin_of_text|>, its
  // tokenizer.json post-processor), or -1 for none; Encode leaves it out.
  virtual int bos_id() const { return -1; }
  // The word a word-initial piece spells ("▁the" -> "the"); "" for any other
  // piece and for the bare marker. Inline: the SentencePiece plugin inherits
  // it.
  virtual std::string WordOfPiece(int id) const {
    const std::string piece = Piece(id);
    const std::string marker = kWordStart;
    return piece.size() > marker.size() &&
                   piece.compare(0, marker.size(), marker) == 0
               ? piece.substr(marker.size())
               : std::string();
  }
  // The ids of `word` where it follows a space in running text, the pieces
  // WordOfPiece reads (SentencePiece's dummy prefix makes that Encode(word)).
  virtual std::vector<int> EncodeWord(const std::string& word) const {
    return Encode(word);
  }
};

// The file whose SHA-256 token shards record as their tokenizer's
// (encode_shards): GPT-2 BPE's vocabulary file, else `model_path` itself.
std::string TokenizerDigestPath(const std::string& model_path);

// Runs SentencePieceTrainer with command-line style arguments; false and
// *error on failure.
bool TrainSentencePiece(const std::string& arguments, std::string* error);

}  // namespace sparse_layers::datasets

#endif  // SPARSE_LAYERS_DATASETS_TEXT_TOKENIZER_H_
