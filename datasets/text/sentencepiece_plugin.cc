// SentencePiece behind the Tokenizer interface, built as a shared object that
// tokenizer.cc loads with RTLD_DEEPBIND: Debian's libsentencepiece embeds its
// own protobuf-lite, which crashes libprotobuf when both share a symbol scope.
#include "datasets/text/tokenizer.h"
#include "sentencepiece_processor.h"
#include "sentencepiece_trainer.h"

namespace sparse_layers::datasets {
namespace {

class SentencePieceTokenizer : public Tokenizer {
 public:
  std::vector<int> Encode(const std::string& text) const override {
    std::vector<int> ids;
    processor_.Encode(text, &ids);  // Byte fallback: every input encodes.
    return ids;
  }
  std::string Decode(const std::vector<int>& ids) const override {
    std::string text;
    processor_.Decode(ids, &text);
    return text;
  }
  std::string Piece(int id) const override { return processor_.IdToPiece(id); }
  int vocab_size() const override { return processor_.GetPieceSize(); }
  int eos_id() const override { return processor_.eos_id(); }

  sentencepiece::SentencePieceProcessor processor_;
};

}  // namespace
}  // namespace sparse_layers::datasets

extern "C" {

sparse_layers::datasets::Tokenizer* SparseLayersLoadTokenizer(
    const std::string& model_path, std::string* error) {
  auto* tokenizer = new sparse_layers::datasets::SentencePieceTokenizer;
  const auto status = tokenizer->processor_.Load(model_path);
  if (!status.ok()) {
    *error = "cannot load tokenizer " + model_path + ": " + status.ToString();
    delete tokenizer;
    return nullptr;
  }
  return tokenizer;
}

bool SparseLayersTrainSentencePiece(const std::string& arguments,
                                    std::string* error) {
  const auto status = sentencepiece::SentencePieceTrainer::Train(arguments);
  if (!status.ok()) *error = status.ToString();
  return status.ok();
}

}  // extern "C"
