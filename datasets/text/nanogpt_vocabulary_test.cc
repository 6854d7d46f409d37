#include "datasets/text/nanogpt_vocabulary.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "base/common/file_io.h"
#include "datasets/text/tokenizer.h"

namespace sparse_layers::datasets {
namespace {

using c10::IValue;

constexpr char kChess[] = " #+-.0123456789;=BKNOQRabcdefghx";

// pickle.dumps({'vocab_size': 32, 'itos': dict(enumerate(kChess)), 'stoi':
// {c: i for i, c in enumerate(kChess)}}) from Python 3.11 (protocol 4, as
// pickle.dump writes meta.pkl by default).
const std::string kChessMetaPkl(
    "\x80\x04\x95\x6a\x01\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x0a"
    "\x76\x6f\x63\x61\x62\x5f\x73\x69\x7a\x65\x94\x4b\x20\x8c\x04\x69"
    "\x74\x6f\x73\x94\x7d\x94\x28\x4b\x00\x8c\x01\x20\x94\x4b\x01\x8c"
    "\x01\x23\x94\x4b\x02\x8c\x01\x2b\x94\x4b\x03\x8c\x01\x2d\x94\x4b"
    "\x04\x8c\x01\x2e\x94\x4b\x05\x8c\x01\x30\x94\x4b\x06\x8c\x01\x31"
    "\x94\x4b\x07\x8c\x01\x32\x94\x4b\x08\x8c\x01\x33\x94\x4b\x09\x8c"
    "\x01\x34\x94\x4b\x0a\x8c\x01\x35\x94\x4b\x0b\x8c\x01\x36\x94\x4b"
    "\x0c\x8c\x01\x37\x94\x4b\x0d\x8c\x01\x38\x94\x4b\x0e\x8c\x01\x39"
    "\x94\x4b\x0f\x8c\x01\x3b\x94\x4b\x10\x8c\x01\x3d\x94\x4b\x11\x8c"
    "\x01\x42\x94\x4b\x12\x8c\x01\x4b\x94\x4b\x13\x8c\x01\x4e\x94\x4b"
    "\x14\x8c\x01\x4f\x94\x4b\x15\x8c\x01\x51\x94\x4b\x16\x8c\x01\x52"
    "\x94\x4b\x17\x8c\x01\x61\x94\x4b\x18\x8c\x01\x62\x94\x4b\x19\x8c"
    "\x01\x63\x94\x4b\x1a\x8c\x01\x64\x94\x4b\x1b\x8c\x01\x65\x94\x4b"
    "\x1c\x8c\x01\x66\x94\x4b\x1d\x8c\x01\x67\x94\x4b\x1e\x8c\x01\x68"
    "\x94\x4b\x1f\x8c\x01\x78\x94\x75\x8c\x04\x73\x74\x6f\x69\x94\x7d"
    "\x94\x28\x68\x04\x4b\x00\x68\x05\x4b\x01\x68\x06\x4b\x02\x68\x07"
    "\x4b\x03\x68\x08\x4b\x04\x68\x09\x4b\x05\x68\x0a\x4b\x06\x68\x0b"
    "\x4b\x07\x68\x0c\x4b\x08\x68\x0d\x4b\x09\x68\x0e\x4b\x0a\x68\x0f"
    "\x4b\x0b\x68\x10\x4b\x0c\x68\x11\x4b\x0d\x68\x12\x4b\x0e\x68\x13"
    "\x4b\x0f\x68\x14\x4b\x10\x68\x15\x4b\x11\x68\x16\x4b\x12\x68\x17"
    "\x4b\x13\x68\x18\x4b\x14\x68\x19\x4b\x15\x68\x1a\x4b\x16\x68\x1b"
    "\x4b\x17\x68\x1c\x4b\x18\x68\x1d\x4b\x19\x68\x1e\x4b\x1a\x68\x1f"
    "\x4b\x1b\x68\x20\x4b\x1c\x68\x21\x4b\x1d\x68\x22\x4b\x1e\x68\x23"
    "\x4b\x1f\x75\x75\x2e",
    373);

std::string Temp(const std::string& name) {
  return std::string(getenv("TEST_TMPDIR")) + "/" + name;
}

// A meta.pkl pickled by LibTorch (protocol 2) from its dict.
std::string WriteMeta(const std::string& name,
                      const c10::impl::GenericDict& meta) {
  std::vector<char> bytes = torch::jit::pickle(IValue(meta), nullptr);
  const std::string path = Temp(name);
  EXPECT_TRUE(
      WriteFileAtomically(path, std::string(bytes.begin(), bytes.end())).ok());
  return path;
}

c10::impl::GenericDict ChessMeta() {
  c10::impl::GenericDict meta(c10::AnyType::get(), c10::AnyType::get());
  c10::impl::GenericDict itos(c10::AnyType::get(), c10::AnyType::get());
  c10::impl::GenericDict stoi(c10::AnyType::get(), c10::AnyType::get());
  const std::string chars = kChess;
  for (int64_t i = 0; i < static_cast<int64_t>(chars.size()); ++i) {
    itos.insert(IValue(i), IValue(chars.substr(i, 1)));
    stoi.insert(IValue(chars.substr(i, 1)), IValue(i));
  }
  meta.insert(IValue("vocab_size"), IValue(int64_t(chars.size())));
  meta.insert(IValue("itos"), IValue(itos));
  meta.insert(IValue("stoi"), IValue(stoi));
  return meta;
}

TEST(NanoGptVocabularyTest, PythonMetaPklBecomesTheChessChars) {
  const std::string meta = Temp("meta.pkl");
  ASSERT_TRUE(WriteFileAtomically(meta, kChessMetaPkl).ok());
  absl::StatusOr<std::string> chars = CharsVocabularyFromMetaPkl(meta, ';');
  ASSERT_TRUE(chars.ok()) << chars.status();
  EXPECT_EQ(*chars, std::string(kChess) + "\n;\n");

  // The tokenizer reads it back: ids as the model's, ';' as eos.
  const std::string path = Temp("chess.chars");
  ASSERT_TRUE(WriteFileAtomically(path, *chars).ok());
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::Load(path, &error);
  ASSERT_NE(tokenizer, nullptr) << error;
  EXPECT_EQ(tokenizer->vocab_size(), 32);
  EXPECT_EQ(tokenizer->eos_id(), 15);
  EXPECT_EQ(tokenizer->Encode(";1.e4"), (std::vector<int>{15, 6, 4, 27, 9}));
}

TEST(NanoGptVocabularyTest, LibTorchPickleReadsTheSame) {
  absl::StatusOr<std::string> chars =
      CharsVocabularyFromMetaPkl(WriteMeta("torch_meta.pkl", ChessMeta()), ';');
  ASSERT_TRUE(chars.ok()) << chars.status();
  EXPECT_EQ(*chars, std::string(kChess) + "\n;\n");
}

// Each bad meta.pkl fails with one line naming the file and the problem.
void ExpectError(const std::string& path, char eos, const std::string& part) {
  absl::StatusOr<std::string> chars = CharsVocabularyFromMetaPkl(path, eos);
  ASSERT_FALSE(chars.ok());
  const std::string message(chars.status().message());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(NanoGptVocabularyTest, BadMetaPklIsOneLine) {
  const std::string truncated = Temp("truncated.pkl");
  ASSERT_TRUE(
      WriteFileAtomically(truncated, kChessMetaPkl.substr(0, 200)).ok());
  ExpectError(truncated, ';', "pickle: truncated");
  ExpectError(Temp("absent.pkl"), ';', "absent.pkl");
  ExpectError(WriteMeta("eos.pkl", ChessMeta()), '\n', "not in the vocabulary");

  c10::impl::GenericDict no_itos = ChessMeta().copy();
  no_itos.erase(IValue("itos"));
  ExpectError(WriteMeta("no_itos.pkl", no_itos), ';', "no 'itos' dict");

  c10::impl::GenericDict gap = ChessMeta().copy();
  c10::impl::GenericDict itos = gap.at(IValue("itos")).toGenericDict().copy();
  itos.erase(IValue(int64_t{3}));
  itos.insert(IValue(int64_t{40}), IValue("z"));
  gap.insert_or_assign(IValue("itos"), IValue(itos));
  ExpectError(WriteMeta("gap.pkl", gap), ';', "no id 3");

  c10::impl::GenericDict newline = ChessMeta().copy();
  itos = newline.at(IValue("itos")).toGenericDict().copy();
  itos.insert_or_assign(IValue(int64_t{0}), IValue("\n"));
  newline.insert_or_assign(IValue("itos"), IValue(itos));
  ExpectError(WriteMeta("newline.pkl", newline), ';',
              "itos[0] is not one byte");

  c10::impl::GenericDict stoi = ChessMeta().copy();
  c10::impl::GenericDict inverse =
      stoi.at(IValue("stoi")).toGenericDict().copy();
  inverse.insert_or_assign(IValue("#"), IValue(int64_t{0}));
  stoi.insert_or_assign(IValue("stoi"), IValue(inverse));
  ExpectError(WriteMeta("stoi.pkl", stoi), ';', "stoi does not map itos[1]");

  c10::impl::GenericDict size = ChessMeta().copy();
  size.insert_or_assign(IValue("vocab_size"), IValue(int64_t{50304}));
  ExpectError(WriteMeta("size.pkl", size), ';', "vocab_size");
}

}  // namespace
}  // namespace sparse_layers::datasets
