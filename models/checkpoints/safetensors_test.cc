#include "models/checkpoints/safetensors.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/common/file_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sparse_layers::layers {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string TestPath(const std::string& stem) {
  return absl::StrCat(std::getenv("TEST_TMPDIR"), "/", stem, ".safetensors");
}

std::string Le64(uint64_t value) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(value >> (8 * i));
  return out;
}

// A file as bytes: the length of `json`, `json`, then `data`.
std::string FileBytes(const std::string& json, const std::string& data) {
  return Le64(json.size()) + json + data;
}

std::string U16Bytes(const std::vector<uint16_t>& values) {
  std::string out;
  for (uint16_t v : values) {
    out.push_back(static_cast<char>(v & 0xFF));
    out.push_back(static_cast<char>(v >> 8));
  }
  return out;
}

std::string F32Bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()),
                     values.size() * sizeof(float));
}

std::string Write(const std::string& stem, const std::string& bytes) {
  const std::string path = TestPath(stem);
  EXPECT_TRUE(WriteFileAtomically(path, bytes).ok());
  return path;
}

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// Bit patterns of a float32 tensor, so that NaN, -0 and infinities compare.
std::vector<uint32_t> BitsOf(const torch::Tensor& tensor) {
  torch::Tensor flat = tensor.contiguous().view(-1);
  std::vector<uint32_t> bits(flat.numel());
  std::memcpy(bits.data(), flat.data_ptr<float>(), bits.size() * 4);
  return bits;
}

TEST(SafetensorsTest, RoundTripIsBitIdentical) {
  torch::manual_seed(7);
  const float inf = std::numeric_limits<float>::infinity();
  std::map<std::string, torch::Tensor> tensors = {
      {"h.0.attn.c_attn.weight", torch::randn({4, 6})},
      // Non-contiguous: written in row-major order of its logical shape.
      {"h.0.mlp.c_fc.weight", torch::randn({5, 3}).t()},
      {"scalar", torch::tensor(2.5f).reshape({})},
      {"empty", torch::empty({0, 4})},
      {"specials",
       torch::tensor({-0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::denorm_min(),
                      std::numeric_limits<float>::max()})},
  };
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"note", "a \"quoted\"\tline\nand \\ \x01 \xc3\xa9"}};
  const std::string path = TestPath("round_trip");
  ASSERT_TRUE(WriteSafetensors(path, tensors, metadata).ok());

  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT((*file)->Names(),
              ElementsAre("empty", "h.0.attn.c_attn.weight",
                          "h.0.mlp.c_fc.weight", "scalar", "specials"));
  EXPECT_EQ((*file)->metadata(), metadata);
  for (const auto& [name, tensor] : tensors) {
    auto read = (*file)->ReadFloat(name, tensor.sizes().vec());
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->scalar_type(), torch::kFloat);
    EXPECT_EQ(read->sizes(), tensor.sizes()) << name;
    EXPECT_EQ(BitsOf(*read), BitsOf(tensor)) << name;
    auto entry = (*file)->Entry(name);
    ASSERT_TRUE(entry.ok());
    EXPECT_EQ(entry->dtype, "F32");
  }
  // Tensors are copies: they outlive the mapping.
  torch::Tensor kept = *(*file)->ReadFloat("scalar");
  file->reset();
  EXPECT_EQ(kept.item<float>(), 2.5f);
}

TEST(SafetensorsTest, WriterMatchesTheOfficialSerializer) {
  // The byte vectors of huggingface/safetensors' tensor.rs tests
  // test_serialization, test_serialization_forced_alignement and test_empty.
  const std::string data = F32Bytes({0, 1, 2, 3, 4, 5});
  const torch::Tensor values = torch::arange(6, torch::kFloat);
  auto bytes = SerializeSafetensors({{"attn.0", values.reshape({1, 2, 3})}});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(
      *bytes,
      Le64(64) +
          R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})" +
          data);
  bytes = SerializeSafetensors({{"attn0", values.reshape({1, 1, 2, 3})}});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(
      *bytes,
      Le64(72) +
          R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})" +
          std::string(7, ' ') + data);
  EXPECT_EQ(*SerializeSafetensors({}), Le64(8) + "{}" + std::string(6, ' '));
  EXPECT_EQ(*SerializeSafetensors({}, {{"framework", "pt"}}),
            Le64(40) + R"({"__metadata__":{"framework":"pt"}})" +
                std::string(5, ' '));

  // And the reader takes the official bytes, padding included.
  auto file = SafetensorsFile::Open(Write("official_aligned", *bytes));
  ASSERT_TRUE(file.ok()) << file.status();
  auto read = (*file)->ReadFloat("attn0", {1, 1, 2, 3});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(torch::equal(*read, values.reshape({1, 1, 2, 3})));
  auto empty = SafetensorsFile::Open(Write(
      "official_empty", Le64(40) + R"({"__metadata__":{"framework":"pt"}})" +
                            std::string(5, ' ')));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE((*empty)->Names().empty());
  EXPECT_EQ((*empty)->metadata(),
            (std::map<std::string, std::string>{{"framework", "pt"}}));
}

TEST(SafetensorsTest, WriterRejectsNonFloatTensors) {
  auto status = WriteSafetensors(TestPath("ints"),
                                 {{"ids", torch::arange(3, torch::kLong)}});
  EXPECT_THAT(status.message(), HasSubstr("tensor 'ids' is Long"));
  EXPECT_FALSE(
      SerializeSafetensors({{"__metadata__", torch::zeros({1})}}).ok());
}

// A hand-built file holding one 2x4 tensor of 16-bit `dtype` values `halves`,
// read back as float32: the bit patterns of its values, row-major.
std::vector<uint32_t> ReadHalves(const std::string& dtype,
                                 const std::vector<uint16_t>& halves) {
  const std::string json =
      absl::StrCat(R"({"h":{"dtype":")", dtype,
                   R"(","shape":[2,4],"data_offsets":[0,16]}})");
  auto file =
      SafetensorsFile::Open(Write(dtype, FileBytes(json, U16Bytes(halves))));
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return {};
  auto read = (*file)->ReadFloat("h", {2, 4});
  EXPECT_TRUE(read.ok()) << read.status();
  return read.ok() ? BitsOf(*read) : std::vector<uint32_t>{};
}

const float kInf = std::numeric_limits<float>::infinity();

TEST(SafetensorsTest, F16ReadsAsExactFloats) {
  // 1, -2, the smallest subnormal 2^-24, the largest normal 65504, +inf, -inf,
  // -0 and the F16 nearest 1/3 (0x3555 = 0.333251953125).
  EXPECT_EQ(
      ReadHalves("F16", {0x3C00, 0xC000, 0x0001, 0x7BFF, 0x7C00, 0xFC00, 0x8000,
                         0x3555}),
      (std::vector<uint32_t>{
          Bits(1.0f), Bits(-2.0f), Bits(std::ldexp(1.0f, -24)), Bits(65504.0f),
          Bits(kInf), Bits(-kInf), Bits(-0.0f), Bits(0.333251953125f)}));
}

TEST(SafetensorsTest, BF16ReadsAsExactFloats) {
  // 1, -2, the smallest subnormal 2^-133, the largest finite
  // (0x7F7F = 255 * 2^120), +inf, -inf, -0 and 0x3EAB = 0.333984375.
  EXPECT_EQ(ReadHalves("BF16", {0x3F80, 0xC000, 0x0001, 0x7F7F, 0x7F80, 0xFF80,
                                0x8000, 0x3EAB}),
            (std::vector<uint32_t>{
                Bits(1.0f), Bits(-2.0f), Bits(std::ldexp(1.0f, -133)),
                Bits(std::ldexp(255.0f, 120)), Bits(kInf), Bits(-kInf),
                Bits(-0.0f), Bits(0.333984375f)}));
}

TEST(SafetensorsTest, UnalignedF32AndHeaderOrderAreFine) {
  // A 9-byte-misaligned data buffer (header not padded) and entries listed
  // out of offset order, as other writers may produce.
  const std::string json =
      R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  auto file = SafetensorsFile::Open(
      Write("unaligned", FileBytes(json, F32Bytes({1.5f, -3.25f, 1e-40f}))));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(BitsOf(*(*file)->ReadFloat("a")),
            (std::vector<uint32_t>{Bits(1.5f), Bits(-3.25f)}));
  EXPECT_EQ(BitsOf(*(*file)->ReadFloat("b")),
            (std::vector<uint32_t>{Bits(1e-40f)}));
}

struct BadFile {
  std::string stem;
  std::string bytes;
  std::string problem;  // The message after "<path>: ".
};

// Names the case in failure messages instead of dumping its bytes.
void PrintTo(const BadFile& bad, std::ostream* os) { *os << bad.stem; }

class BadFileTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadFileTest, FailsWithOneLineNamingFileAndProblem) {
  const BadFile& bad = GetParam();
  const std::string path = Write(bad.stem, bad.bytes);
  auto file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()), StartsWith(path + ": "));
  EXPECT_THAT(std::string(file.status().message()), HasSubstr(bad.problem));
  EXPECT_THAT(std::string(file.status().message()), Not(HasSubstr("\n")));
}

const std::string kOneF32 = F32Bytes({1, 2, 3, 4});  // 16 bytes.

std::string Entry(const std::string& name, const std::string& dtype,
                  const std::string& shape, const std::string& offsets) {
  return absl::StrCat("\"", name, "\":{\"dtype\":\"", dtype,
                      "\",\"shape\":", shape, ",\"data_offsets\":", offsets,
                      "}");
}

// A header object of the given "name":{...} members.
std::string Json(const std::vector<std::string>& members) {
  return absl::StrCat("{", absl::StrJoin(members, ","), "}");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadFileTest,
    ::testing::Values(
        BadFile{"short", std::string("\x05\0\0\0", 4),
                "truncated: 4 bytes, fewer than the 8-byte header length"},
        BadFile{"header_past_end", Le64(1234) + std::string(92, '{'),
                "truncated: header says 1234 bytes, file has 92 after the "
                "8-byte length"},
        BadFile{"header_huge", Le64(uint64_t{1} << 63) + "{}",
                "header length 9223372036854775808 exceeds the format's limit "
                "of 100000000 bytes"},
        BadFile{"not_object", FileBytes("[1, 2]", ""),
                "header does not begin with '{'"},
        BadFile{"invalid_json", FileBytes(R"({"x": {"dtype": "F32",)", ""),
                "header is not valid JSON: "},
        BadFile{
            "offsets_out_of_range",
            FileBytes(Json({Entry("x", "F32", "[100]", "[0,400]")}), kOneF32),
            "tensor 'x' has data_offsets [0, 400] past the end of the "
            "16-byte data buffer"},
        BadFile{
            "wrong_byte_count",
            FileBytes(Json({Entry("x", "F32", "[2,3]", "[0,16]")}), kOneF32),
            "tensor 'x' has 16 bytes of data, but shape [2, 3] of F32 "
            "needs 24"},
        BadFile{"unknown_dtype",
                FileBytes(Json({Entry("x", "Q4", "[4]", "[0,16]")}), kOneF32),
                "tensor 'x' has unknown dtype 'Q4'"},
        BadFile{"negative_shape",
                FileBytes(Json({Entry("x", "F32", "[-4]", "[0,16]")}), kOneF32),
                "tensor 'x' has a bad shape dimension: -4 is not a "
                "non-negative integer"},
        BadFile{"missing_field",
                FileBytes(R"({"x":{"dtype":"F32","shape":[4]}})", kOneF32),
                "tensor 'x' lacks one of dtype, shape and data_offsets"},
        BadFile{"gap",
                FileBytes(Json({Entry("a", "F32", "[1]", "[0,4]"),
                                Entry("b", "F32", "[1]", "[8,12]")}),
                          F32Bytes({1, 2, 3})),
                "tensor 'b' data starts at byte 8 of the data buffer, "
                "expected 4"},
        BadFile{"overlap",
                FileBytes(Json({Entry("a", "F32", "[2]", "[0,8]"),
                                Entry("b", "F32", "[2]", "[4,12]")}),
                          F32Bytes({1, 2, 3})),
                "tensor 'b' data starts at byte 4 of the data buffer, "
                "expected 8"},
        BadFile{"trailing_bytes",
                FileBytes(Json({Entry("a", "F32", "[2]", "[0,8]")}), kOneF32),
                "data buffer has 16 bytes but its tensors cover 8"},
        // The spec disallows duplicate keys; protobuf's parser rejects them.
        BadFile{"duplicate_key",
                FileBytes(Json({Entry("a", "F32", "[1]", "[0,4]"),
                                Entry("a", "F32", "[1]", "[4,8]")}),
                          F32Bytes({1, 2})),
                "header is not valid JSON: (fields[0]) a: Repeated map key: "
                "'a' is already set"},
        BadFile{"not_utf8",
                FileBytes(Json({Entry("\xff", "F32", "[1]", "[0,4]")}),
                          F32Bytes({1})),
                "header is not valid JSON: Encountered non UTF-8 code points"},
        BadFile{"offset_beyond_2_to_53",
                FileBytes(Json({Entry("x", "F32", "[1]",
                                      "[18446744073709551615,4]")}),
                          F32Bytes({1})),
                "tensor 'x' has data_offsets that are not non-negative "
                "integers"},
        BadFile{"metadata_not_string",
                FileBytes(R"({"__metadata__":{"step":3}})", ""),
                "__metadata__ value 'step' is not a string"}),
    [](const auto& info) { return info.param.stem; });

class ReadErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = Write("read_errors",
                  FileBytes(Json({Entry("x", "F32", "[3,4]", "[0,48]"),
                                  Entry("ids", "I8", "[4]", "[48,52]")}),
                            std::string(52, '\0')));
    auto file = SafetensorsFile::Open(path_);
    ASSERT_TRUE(file.ok()) << file.status();
    file_ = *std::move(file);
  }

  std::string path_;
  std::unique_ptr<SafetensorsFile> file_;
};

TEST_F(ReadErrorTest, MissingTensor) {
  auto read = file_->ReadFloat("h.0.attn.c_attn.weight");
  EXPECT_TRUE(absl::IsNotFound(read.status()));
  EXPECT_EQ(read.status().message(),
            path_ + ": tensor 'h.0.attn.c_attn.weight' missing");
  EXPECT_FALSE(file_->Contains("h.0.attn.c_attn.weight"));
}

TEST_F(ReadErrorTest, WrongShape) {
  EXPECT_TRUE(file_->CheckShape("x", {3, 4}).ok());
  auto read = file_->ReadFloat("x", {4, 3});
  EXPECT_EQ(read.status().message(),
            path_ + ": tensor 'x' has shape [3, 4], expected [4, 3]");
  EXPECT_THAT(file_->CheckShape("x", {12}).message(),
              HasSubstr("expected [12]"));
}

TEST_F(ReadErrorTest, UnsupportedDtype) {
  auto read = file_->ReadFloat("ids");
  EXPECT_EQ(read.status().message(),
            path_ +
                ": unsupported dtype 'I8' for tensor 'ids' (F32, F16 and BF16 "
                "read as float32)");
  EXPECT_EQ(file_->Entry("ids")->dtype, "I8");
}

TEST(SafetensorsTest, AbsentFileIsNotFound) {
  auto file = SafetensorsFile::Open(TestPath("absent"));
  EXPECT_TRUE(absl::IsNotFound(file.status()));
  EXPECT_THAT(std::string(file.status().message()),
              HasSubstr("absent.safetensors: cannot open: No such file"));
}

}  // namespace
}  // namespace sparse_layers::layers
