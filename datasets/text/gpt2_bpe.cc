#include "datasets/text/gpt2_bpe.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "re2/re2.h"
#include "tools/common/file_io.h"

namespace sparse_layers::datasets {
namespace {

// JavaScript's \s (the reference encoder's): RE2's \s is ASCII only.
constexpr char kWhitespace[] =
    "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}"
    "\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

// GPT-2's pattern without its alternative \s+(?!\S), which RE2 cannot express
// (no lookahead); the last alternative, \s+, is captured so that PreTokenize
// can give the lookahead's answer instead.
std::string Pattern() {
  return absl::StrCat(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^)",
                      kWhitespace, R"(\p{L}\p{N}]+|([)", kWhitespace, "]+)");
}

// GPT-2's printable spelling of bytes (Radford et al. 2019, Sec. 2.2): bytes
// that are printable Latin-1 stand for themselves, the other 68 for the code
// points 256, 257, ... in byte order, so no piece holds whitespace or control
// characters.
std::vector<int> ByteCodePoints() {
  std::vector<int> code_points(256, -1);
  auto printable = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
           (b >= 0xAE && b <= 0xFF);
  };
  int next = 256;
  for (int b = 0; b < 256; ++b) code_points[b] = printable(b) ? b : next++;
  return code_points;
}

void AppendUtf8(int code_point, std::string& out) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

// The length of the valid UTF-8 sequence at text[i]; else 0 when text[i]
// cannot begin one, or -k when its first k bytes are a maximal invalid subpart
// (bounds of the second byte as in the Unicode Standard, Table 3-7).
int ValidSequenceLength(absl::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  if (lead < 0x80) return 1;
  int length;
  uint8_t low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;  // Surrogates are not characters.
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;  // Above U+10FFFF.
  } else {
    return 0;
  }
  for (int k = 1; k < length; ++k) {
    if (i + k >= text.size() || byte(i + k) < low || byte(i + k) > high) {
      return -k;
    }
    low = 0x80;
    high = 0xBF;
  }
  return length;
}

// The code points of valid UTF-8 `text`.
std::vector<int> CodePoints(absl::string_view text) {
  std::vector<int> code_points;
  for (size_t i = 0; i < text.size();) {
    const uint8_t lead = static_cast<uint8_t>(text[i]);
    const int length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    int code_point = length == 1 ? lead : lead & (0x7F >> length);
    for (int k = 1; k < length && i + k < text.size(); ++k) {
      code_point =
          (code_point << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3F);
    }
    code_points.push_back(code_point);
    i += length;
  }
  return code_points;
}

absl::Status Corrupt(const std::string& path, absl::string_view problem) {
  return absl::DataLossError(absl::StrCat(path, ": ", problem));
}

absl::StatusOr<std::string> ReadVocabularyFile(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  if (!contents.ok()) {
    return absl::NotFoundError(absl::StrCat("cannot read the GPT-2 BPE file ",
                                            path, ": ",
                                            contents.status().message()));
  }
  return contents;
}

// Entries of a cache of merged pre-tokens kept before it is cleared, so a long
// stream of distinct words cannot grow it without bound.
constexpr size_t kMaxCachedPreTokens = 1 << 18;

}  // namespace

std::string ReplaceInvalidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const int length = ValidSequenceLength(text, i);
    if (length > 0) {
      out.append(text.data() + i, length);
      i += length;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD.
      i += length == 0 ? 1 : -length;
    }
  }
  return out;
}

Gpt2Bpe::Gpt2Bpe() : pattern_(std::make_unique<re2::RE2>(Pattern())) {}
Gpt2Bpe::~Gpt2Bpe() = default;

bool Gpt2Bpe::IsGpt2BpePath(const std::string& path) {
  std::error_code error;
  const std::filesystem::path name = std::filesystem::path(path).filename();
  return std::filesystem::is_directory(path, error) || name == kEncoderFile ||
         name == kHuggingFaceEncoderFile;
}

absl::StatusOr<std::unique_ptr<Gpt2Bpe>> Gpt2Bpe::Load(
    const std::string& path) {
  std::error_code error;
  const bool is_directory = std::filesystem::is_directory(path, error);
  const std::filesystem::path directory =
      is_directory ? std::filesystem::path(path)
                   : std::filesystem::path(path).parent_path();
  // A Hugging Face model directory names the same two files vocab.json and
  // merges.txt; OpenAI's release, encoder.json and vocab.bpe.
  const bool hugging_face =
      is_directory
          ? !std::filesystem::exists(directory / kEncoderFile, error) &&
                std::filesystem::exists(directory / kHuggingFaceEncoderFile,
                                        error)
          : std::filesystem::path(path).filename() == kHuggingFaceEncoderFile;
  if (hugging_face) {
    return FromFiles((directory / kHuggingFaceEncoderFile).string(),
                     (directory / kHuggingFaceMergesFile).string());
  }
  return FromFiles((directory / kEncoderFile).string(),
                   (directory / kMergesFile).string());
}

absl::StatusOr<std::unique_ptr<Gpt2Bpe>> Gpt2Bpe::FromFiles(
    const std::string& encoder_path, const std::string& merges_path) {
  std::unique_ptr<Gpt2Bpe> bpe(new Gpt2Bpe());
  if (!bpe->pattern_->ok()) {
    return absl::InternalError(
        absl::StrCat("GPT-2 pre-token pattern: ", bpe->pattern_->error()));
  }

  absl::StatusOr<std::string> encoder_json = ReadVocabularyFile(encoder_path);
  if (!encoder_json.ok()) return encoder_json.status();
  google::protobuf::Struct encoder;
  if (auto status =
          google::protobuf::util::JsonStringToMessage(*encoder_json, &encoder);
      !status.ok()) {
    const std::string message = status.message().as_string();
    return Corrupt(encoder_path,
                   absl::StrCat("not a JSON object of piece -> id: ",
                                message.substr(0, message.find('\n'))));
  }
  const int size = encoder.fields_size();
  if (size == 0) return Corrupt(encoder_path, "no pieces");
  bpe->pieces_.assign(size, "");
  std::vector<bool> seen(size, false);
  for (const auto& [piece, value] : encoder.fields()) {
    const double id = value.number_value();
    if (value.kind_case() != google::protobuf::Value::kNumberValue ||
        id != static_cast<int>(id) || id < 0 || id >= size) {
      return Corrupt(encoder_path,
                     absl::StrCat("the id of piece '", piece,
                                  "' is not an integer in [0, ", size, ")"));
    }
    if (seen[static_cast<int>(id)]) {
      return Corrupt(encoder_path, absl::StrCat("id ", id, " appears twice"));
    }
    seen[static_cast<int>(id)] = true;
    bpe->pieces_[static_cast<int>(id)] = piece;
  }
  auto eos = encoder.fields().find(kEndOfText);
  if (eos == encoder.fields().end()) {
    return Corrupt(encoder_path, absl::StrCat("no ", kEndOfText, " piece"));
  }
  bpe->eos_id_ = static_cast<int>(eos->second.number_value());

  // Each piece's bytes, read back through the printable spelling.
  const std::vector<int> byte_code_points = ByteCodePoints();
  absl::flat_hash_map<int, int> byte_of_code_point;
  for (int b = 0; b < 256; ++b) byte_of_code_point[byte_code_points[b]] = b;
  absl::flat_hash_map<std::string, int> id_of_piece;
  bpe->bytes_.resize(size);
  for (int id = 0; id < size; ++id) {
    id_of_piece[bpe->pieces_[id]] = id;
    for (int code_point : CodePoints(bpe->pieces_[id])) {
      auto b = byte_of_code_point.find(code_point);
      // <|endoftext|> is plain ASCII, so every GPT-2 piece reads back.
      if (b == byte_of_code_point.end()) {
        return Corrupt(encoder_path,
                       absl::StrCat("piece '", bpe->pieces_[id],
                                    "' is not spelled in GPT-2's byte "
                                    "alphabet"));
      }
      bpe->bytes_[id] += static_cast<char>(b->second);
    }
  }
  for (int b = 0; b < 256; ++b) {
    std::string piece;
    AppendUtf8(byte_code_points[b], piece);
    auto id = id_of_piece.find(piece);
    if (id == id_of_piece.end()) {
      return Corrupt(encoder_path,
                     absl::StrCat("no piece for byte ", b, " ('", piece, "')"));
    }
    bpe->byte_ids_[b] = id->second;
  }

  absl::StatusOr<std::string> merges_text = ReadVocabularyFile(merges_path);
  if (!merges_text.ok()) return merges_text.status();
  std::vector<absl::string_view> lines =
      absl::StrSplit(*merges_text, '\n', absl::SkipEmpty());
  if (lines.empty() || !absl::StartsWith(lines[0], "#version")) {
    return Corrupt(merges_path, "does not begin with a #version line");
  }
  for (size_t line = 1; line < lines.size(); ++line) {
    const std::vector<absl::string_view> pair =
        absl::StrSplit(lines[line], ' ', absl::SkipEmpty());
    auto left =
        pair.size() == 2 ? id_of_piece.find(pair[0]) : id_of_piece.end();
    auto right =
        pair.size() == 2 ? id_of_piece.find(pair[1]) : id_of_piece.end();
    auto merged = pair.size() == 2
                      ? id_of_piece.find(absl::StrCat(pair[0], pair[1]))
                      : id_of_piece.end();
    if (left == id_of_piece.end() || right == id_of_piece.end() ||
        merged == id_of_piece.end()) {
      return Corrupt(merges_path,
                     absl::StrCat("line ", line + 1, " '", lines[line],
                                  "' is not two pieces of ", encoder_path,
                                  " whose concatenation is one"));
    }
    const int rank = static_cast<int>(line) - 1;
    // A repeated merge takes its last rank, as GPT-2's dict of ranks does.
    bpe->merges_.insert_or_assign({left->second, right->second},
                                  std::make_pair(rank, merged->second));
  }
  return bpe;
}

std::vector<absl::string_view> Gpt2Bpe::PreTokenize(
    absl::string_view text) const {
  std::vector<absl::string_view> pre_tokens;
  const re2::StringPiece input(text.data(), text.size());
  re2::StringPiece match[2];
  size_t position = 0;
  while (position < input.size() &&
         pattern_->Match(input, position, input.size(), re2::RE2::UNANCHORED,
                         match, 2)) {
    size_t length = match[0].size();
    const size_t end = match[0].data() - input.data() + length;
    // GPT-2's \s+(?!\S): a run of whitespace before a non-space leaves its
    // last character to the next pre-token ("a", " ", " world" for "a  world").
    if (match[1].data() != nullptr && end < input.size()) {
      size_t last = length - 1;
      while (last > 0 &&
             (static_cast<uint8_t>(match[0][last]) & 0xC0) == 0x80) {
        --last;
      }
      if (last > 0) length = last;
    }
    if (length == 0) break;  // Not reached: every alternative takes one.
    pre_tokens.emplace_back(match[0].data(), length);
    position = match[0].data() - input.data() + length;
  }
  return pre_tokens;
}

std::vector<int> Gpt2Bpe::Merge(absl::string_view pre_token) const {
  std::vector<int> word;
  word.reserve(pre_token.size());
  for (char c : pre_token) word.push_back(byte_ids_[static_cast<uint8_t>(c)]);
  // GPT-2's loop: merge every occurrence of the lowest-ranked adjacent pair,
  // left to right, until no adjacent pair is a merge.
  while (word.size() > 1) {
    int best_rank = std::numeric_limits<int>::max();
    std::pair<int, int> best;
    int merged = -1;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      auto it = merges_.find(std::make_pair(word[i], word[i + 1]));
      if (it != merges_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best = {word[i], word[i + 1]};
        merged = it->second.second;
      }
    }
    if (merged < 0) break;
    std::vector<int> next;
    next.reserve(word.size());
    for (size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == best.first &&
          word[i + 1] == best.second) {
        next.push_back(merged);
        i += 2;
      } else {
        next.push_back(word[i]);
        ++i;
      }
    }
    word = std::move(next);
  }
  return word;
}

void Gpt2Bpe::AppendBpe(absl::string_view pre_token,
                        std::vector<int>& ids) const {
  {
    absl::MutexLock lock(&cache_mutex_);
    auto it = cache_.find(pre_token);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int> merged = Merge(pre_token);
  ids.insert(ids.end(), merged.begin(), merged.end());
  absl::MutexLock lock(&cache_mutex_);
  if (cache_.size() >= kMaxCachedPreTokens) cache_.clear();
  cache_.emplace(std::string(pre_token), std::move(merged));
}

std::vector<int> Gpt2Bpe::Encode(const std::string& text) const {
  const std::string valid = ReplaceInvalidUtf8(text);
  std::vector<int> ids;
  for (absl::string_view pre_token : PreTokenize(valid)) {
    AppendBpe(pre_token, ids);
  }
  return ids;
}

std::string Gpt2Bpe::Decode(const std::vector<int>& ids) const {
  std::string text;
  for (int id : ids) {
    if (id >= 0 && id < vocab_size()) text += bytes_[id];
  }
  return text;
}

std::string Gpt2Bpe::Piece(int id) const {
  return id >= 0 && id < vocab_size() ? pieces_[id] : "";
}

}  // namespace sparse_layers::datasets
