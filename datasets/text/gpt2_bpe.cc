#include "datasets/text/gpt2_bpe.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/common/file_io.h"
#include "base/common/json_object.h"
#include "base/common/status_macros.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "re2/re2.h"
#include "unicode/bytestream.h"
#include "unicode/normalizer2.h"

namespace sparse_layers::datasets {
namespace {

// JavaScript's \s (the reference encoder's): RE2's \s is ASCII only.
constexpr char kWhitespace[] =
    "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}"
    "\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

// GPT-2's pre-token pattern as tokenizer.json spells it (ByteLevel's regex).
constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The alternatives \s+(?!\S)|\s+, which RE2 cannot express (no lookahead):
// Re2Pattern captures one \s+ instead, and PreTokenize gives the lookahead's
// answer.
constexpr absl::string_view kLookahead = R"(\s+(?!\S)|\s+)";

// `pattern` (tokenizer.json's, Oniguruma syntax) in RE2's: \s and \S as
// JavaScript's whitespace (RE2's \s is ASCII), kLookahead as the one
// capturing group, other groups not capturing. Other lookarounds and \S
// inside a class are errors (*error set, "" returned).
std::string Re2Pattern(absl::string_view pattern, std::string* error) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const absl::string_view rest = pattern.substr(i);
    const char c = pattern[i];
    if (!in_class && absl::StartsWith(rest, kLookahead) &&
        (rest.size() == kLookahead.size() || rest[kLookahead.size()] == '|' ||
         rest[kLookahead.size()] == ')')) {
      absl::StrAppend(&out, "([", kWhitespace, "]+)");
      i += kLookahead.size() - 1;
    } else if (c == '\\' && i + 1 < pattern.size()) {
      const char escaped = pattern[++i];
      if (escaped == 's') {
        absl::StrAppend(&out, in_class ? "" : "[", kWhitespace,
                        in_class ? "" : "]");
      } else if (escaped == 'S' && !in_class) {
        absl::StrAppend(&out, "[^", kWhitespace, "]");
      } else if (escaped == 'S') {
        *error = "\\S inside a character class is not supported";
        return "";
      } else {
        out += c;
        out += escaped;
      }
    } else if (c == '(' && !in_class && absl::StartsWith(rest, "(?") &&
               (absl::StartsWith(rest, "(?=") ||
                absl::StartsWith(rest, "(?!") ||
                absl::StartsWith(rest, "(?<"))) {
      *error = absl::StrCat("lookaround other than ", kLookahead,
                            " is not supported (RE2 has none)");
      return "";
    } else if (c == '(' && !in_class && !absl::StartsWith(rest, "(?")) {
      out += "(?:";  // Split keeps whole matches, so groups need not capture.
    } else {
      if (c == '[' && !in_class) {
        in_class = true;
        if (absl::StartsWith(rest, "[^")) out += pattern[i++];
      } else if (c == ']' && in_class) {
        in_class = false;
      }
      out += pattern[i];
    }
  }
  return out;
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

absl::Status Unsupported(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": ", what,
      " is not supported (only byte-level BPE: GPT-2, Pythia, Llama 3)"));
}

// tokenizer.json's fields; absent ones read as empty, false or null.
const google::protobuf::Value* Field(const google::protobuf::Struct& object,
                                     const std::string& name) {
  auto it = object.fields().find(name);
  return it == object.fields().end() ? nullptr : &it->second;
}
std::string StringField(const google::protobuf::Struct& object,
                        const std::string& name) {
  const google::protobuf::Value* value = Field(object, name);
  return value != nullptr ? value->string_value() : "";
}
bool BoolField(const google::protobuf::Struct& object, const std::string& name,
               bool absent = false) {
  const google::protobuf::Value* value = Field(object, name);
  return value != nullptr && value->has_bool_value() ? value->bool_value()
                                                     : absent;
}
const google::protobuf::Struct& StructField(
    const google::protobuf::Struct& object, const std::string& name) {
  const google::protobuf::Value* value = Field(object, name);
  return value != nullptr ? value->struct_value()
                          : google::protobuf::Struct::default_instance();
}
const google::protobuf::ListValue& ListField(
    const google::protobuf::Struct& object, const std::string& name) {
  const google::protobuf::Value* value = Field(object, name);
  return value != nullptr ? value->list_value()
                          : google::protobuf::ListValue::default_instance();
}

// The special token tokenizer.json's post-processor puts before a text: the
// first item of a TemplateProcessing's single template (Llama 3's
// <|begin_of_text|>), alone or in a Sequence; -1 for none.
absl::StatusOr<int> BeginOfTextId(
    const std::string& path, const google::protobuf::Struct& root,
    const absl::flat_hash_map<std::string, int>& id_of_piece) {
  const google::protobuf::Struct& processor =
      StructField(root, "post_processor");
  std::vector<const google::protobuf::Struct*> steps = {&processor};
  if (StringField(processor, "type") == "Sequence") {
    steps.clear();
    for (const auto& step : ListField(processor, "processors").values()) {
      steps.push_back(&step.struct_value());
    }
  }
  for (const google::protobuf::Struct* step : steps) {
    const google::protobuf::ListValue& single = ListField(*step, "single");
    if (StringField(*step, "type") != "TemplateProcessing" ||
        single.values_size() == 0) {
      continue;
    }
    const google::protobuf::Struct& special =
        StructField(single.values(0).struct_value(), "SpecialToken");
    if (special.fields().empty()) return -1;  // The text comes first.
    const std::string name = StringField(special, "id");
    auto it = id_of_piece.find(name);
    if (it == id_of_piece.end()) {
      return Corrupt(path, absl::StrCat("post_processor's special token '",
                                        name, "' is not a piece"));
    }
    return it->second;
  }
  return -1;
}

// The pre-token pattern of tokenizer.json's pre_tokenizer: GPT-2's for a
// ByteLevel that splits (use_regex, its default), a Split's regex for a
// Sequence of it and a ByteLevel that does not (Llama 3's).
absl::StatusOr<std::string> PreTokenizerPattern(
    const std::string& path, const google::protobuf::Struct& root) {
  const google::protobuf::Struct& pre = StructField(root, "pre_tokenizer");
  const auto byte_level = [](const google::protobuf::Struct& step,
                             bool use_regex) {
    return StringField(step, "type") == "ByteLevel" &&
           !BoolField(step, "add_prefix_space") &&
           BoolField(step, "use_regex", /*absent=*/true) == use_regex;
  };
  if (byte_level(pre, true)) return std::string(kGpt2Pattern);
  const google::protobuf::ListValue& steps = ListField(pre, "pretokenizers");
  if (StringField(pre, "type") == "Sequence" && steps.values_size() == 2) {
    const google::protobuf::Struct& split = steps.values(0).struct_value();
    const google::protobuf::Struct& pattern = StructField(split, "pattern");
    if (StringField(split, "type") == "Split" &&
        Field(pattern, "Regex") != nullptr &&
        StringField(split, "behavior") == "Isolated" &&
        !BoolField(split, "invert") &&
        byte_level(steps.values(1).struct_value(), false)) {
      return StringField(pattern, "Regex");
    }
  }
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(pre, &json);
  return Unsupported(
      path, absl::StrCat("pre_tokenizer ", json.substr(0, 200),
                         " (ByteLevel with its regex, or Split(Regex, "
                         "Isolated) then ByteLevel without, no prefix space)"));
}

// `text` (valid UTF-8) in Unicode Normalization Form C, as tokenizer.json's
// NFC normalizer (Pythia's) makes it; most text already is, and is returned
// unchanged.
std::string Nfc(const std::string& text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status) ||
      (nfc->isNormalizedUTF8(text, status) && U_SUCCESS(status))) {
    return text;  // FromTokenizerJson checked that the instance loads.
  }
  std::string normalized;
  icu::StringByteSink<std::string> sink(&normalized, text.size());
  status = U_ZERO_ERROR;
  nfc->normalizeUTF8(0, text, sink, nullptr, status);
  return U_SUCCESS(status) ? normalized : text;
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

Gpt2Bpe::Gpt2Bpe(absl::string_view pattern) {
  const std::string re2_pattern = Re2Pattern(pattern, &pattern_error_);
  if (!pattern_error_.empty()) return;
  pattern_ = std::make_unique<re2::RE2>(re2_pattern);
  if (!pattern_->ok()) {
    pattern_error_ = absl::StrCat("RE2 cannot compile it: ", pattern_->error());
  }
}
Gpt2Bpe::~Gpt2Bpe() = default;

bool Gpt2Bpe::IsGpt2BpePath(const std::string& path) {
  std::error_code error;
  const std::filesystem::path name = std::filesystem::path(path).filename();
  return std::filesystem::is_directory(path, error) || name == kEncoderFile ||
         name == kHuggingFaceEncoderFile || name == kTokenizerJsonFile;
}

std::string Gpt2Bpe::VocabularyFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return path;
  // OpenAI's release names the files encoder.json and vocab.bpe; a Hugging
  // Face directory, vocab.json and merges.txt, or only tokenizer.json.
  for (const char* name :
       {kEncoderFile, kHuggingFaceEncoderFile, kTokenizerJsonFile}) {
    const std::filesystem::path file = std::filesystem::path(path) / name;
    if (std::filesystem::exists(file, error)) return file.string();
  }
  return (std::filesystem::path(path) / kEncoderFile).string();
}

absl::StatusOr<std::unique_ptr<Gpt2Bpe>> Gpt2Bpe::Load(
    const std::string& path) {
  const std::filesystem::path file = VocabularyFile(path);
  const std::filesystem::path directory = file.parent_path();
  if (file.filename() == kTokenizerJsonFile) {
    return FromTokenizerJson(file.string());
  }
  return FromFiles(file.string(),
                   (directory / (file.filename() == kHuggingFaceEncoderFile
                                     ? kHuggingFaceMergesFile
                                     : kMergesFile))
                       .string());
}

absl::StatusOr<absl::flat_hash_map<std::string, int>> Gpt2Bpe::SetVocabulary(
    const std::string& path, const google::protobuf::Struct& vocabulary,
    const std::vector<std::pair<int, std::string>>& added,
    bool require_end_of_text) {
  if (vocabulary.fields_size() == 0) return Corrupt(path, "no pieces");
  const int size = vocabulary.fields_size() + static_cast<int>(added.size());
  pieces_.assign(size, "");
  bytes_.assign(size, "");
  // Ids are unique and below `size`, so each id of [0, size) has one piece.
  std::vector<bool> seen(size, false);
  for (const auto& [piece, value] : vocabulary.fields()) {
    const double id = value.number_value();
    if (value.kind_case() != google::protobuf::Value::kNumberValue ||
        id != static_cast<int>(id) || id < 0 || id >= size) {
      return Corrupt(path,
                     absl::StrCat("the id of piece '", piece,
                                  "' is not an integer in [0, ", size, ")"));
    }
    if (seen[static_cast<int>(id)]) {
      return Corrupt(path, absl::StrCat("id ", id, " appears twice"));
    }
    seen[static_cast<int>(id)] = true;
    pieces_[static_cast<int>(id)] = piece;
  }
  std::vector<bool> special(size, false);
  for (const auto& [id, content] : added) {
    if (id < 0 || id >= size || seen[id]) {
      return Corrupt(path,
                     absl::StrCat("added token '", content, "' has id ", id,
                                  ", not a free id of [0, ", size, ")"));
    }
    seen[id] = special[id] = true;
    pieces_[id] = bytes_[id] = content;
  }
  absl::flat_hash_map<std::string, int> id_of_piece;
  for (int id = 0; id < size; ++id) id_of_piece[pieces_[id]] = id;
  for (const char* end_of_text : {kEndOfText, "<|end_of_text|>"}) {
    auto eos = id_of_piece.find(end_of_text);
    if (eos != id_of_piece.end()) {
      eos_id_ = eos->second;
      break;
    }
  }
  if (require_end_of_text && (eos_id_ < 0 || pieces_[eos_id_] != kEndOfText)) {
    return Corrupt(path, absl::StrCat("no ", kEndOfText, " piece"));
  }

  // Each piece's bytes, read back through the printable spelling.
  const std::vector<int> byte_code_points = ByteCodePoints();
  absl::flat_hash_map<int, int> byte_of_code_point;
  for (int b = 0; b < 256; ++b) byte_of_code_point[byte_code_points[b]] = b;
  for (int id = 0; id < size; ++id) {
    if (special[id]) continue;
    for (int code_point : CodePoints(pieces_[id])) {
      auto b = byte_of_code_point.find(code_point);
      // <|endoftext|> is plain ASCII, so every GPT-2 piece reads back.
      if (b == byte_of_code_point.end()) {
        return Corrupt(path, absl::StrCat("piece '", pieces_[id],
                                          "' is not spelled in GPT-2's byte "
                                          "alphabet"));
      }
      bytes_[id] += static_cast<char>(b->second);
    }
  }
  for (int b = 0; b < 256; ++b) {
    std::string piece;
    AppendUtf8(byte_code_points[b], piece);
    auto id = id_of_piece.find(piece);
    if (id == id_of_piece.end()) {
      return Corrupt(path,
                     absl::StrCat("no piece for byte ", b, " ('", piece, "')"));
    }
    byte_ids_[b] = id->second;
  }
  return id_of_piece;
}

bool Gpt2Bpe::AddMerge(const absl::flat_hash_map<std::string, int>& id_of_piece,
                       absl::string_view left, absl::string_view right,
                       int rank) {
  auto left_id = id_of_piece.find(left);
  auto right_id = id_of_piece.find(right);
  auto merged = id_of_piece.find(absl::StrCat(left, right));
  if (left_id == id_of_piece.end() || right_id == id_of_piece.end() ||
      merged == id_of_piece.end()) {
    return false;
  }
  // A repeated merge takes its last rank, as GPT-2's dict of ranks does.
  merges_.insert_or_assign({left_id->second, right_id->second},
                           std::make_pair(rank, merged->second));
  return true;
}

absl::StatusOr<std::unique_ptr<Gpt2Bpe>> Gpt2Bpe::FromFiles(
    const std::string& encoder_path, const std::string& merges_path) {
  std::unique_ptr<Gpt2Bpe> bpe(new Gpt2Bpe(kGpt2Pattern));
  if (!bpe->pattern_error_.empty()) {
    return absl::InternalError(
        absl::StrCat("GPT-2 pre-token pattern: ", bpe->pattern_error_));
  }

  ASSIGN_OR_RETURN(const std::string encoder_json,
                   ReadVocabularyFile(encoder_path));
  absl::StatusOr<google::protobuf::Struct> encoder =
      ParseJsonObject(encoder_json);
  if (!encoder.ok()) {
    return Corrupt(encoder_path,
                   absl::StrCat("not a JSON object of piece -> id: ",
                                encoder.status().message()));
  }
  ASSIGN_OR_RETURN(const auto id_of_piece,
                   bpe->SetVocabulary(encoder_path, *encoder, {},
                                      /*require_end_of_text=*/true));

  ASSIGN_OR_RETURN(const std::string merges_text,
                   ReadVocabularyFile(merges_path));
  std::vector<absl::string_view> lines =
      absl::StrSplit(merges_text, '\n', absl::SkipEmpty());
  if (lines.empty() || !absl::StartsWith(lines[0], "#version")) {
    return Corrupt(merges_path, "does not begin with a #version line");
  }
  for (size_t line = 1; line < lines.size(); ++line) {
    const std::vector<absl::string_view> pair =
        absl::StrSplit(lines[line], ' ', absl::SkipEmpty());
    if (pair.size() != 2 || !bpe->AddMerge(id_of_piece, pair[0], pair[1],
                                           static_cast<int>(line) - 1)) {
      return Corrupt(merges_path,
                     absl::StrCat("line ", line + 1, " '", lines[line],
                                  "' is not two pieces of ", encoder_path,
                                  " whose concatenation is one"));
    }
  }
  return bpe;
}

absl::StatusOr<std::unique_ptr<Gpt2Bpe>> Gpt2Bpe::FromTokenizerJson(
    const std::string& path) {
  using google::protobuf::Struct;
  using google::protobuf::Value;
  ASSIGN_OR_RETURN(const std::string json, ReadVocabularyFile(path));
  absl::StatusOr<Struct> parsed = ParseJsonObject(json);
  if (!parsed.ok()) {
    return Corrupt(
        path, absl::StrCat("not a JSON object: ", parsed.status().message()));
  }
  const Struct& root = *parsed;
  const Struct& model = StructField(root, "model");
  if (const std::string type = StringField(model, "type"); type != "BPE") {
    return Unsupported(path, absl::StrCat("model.type '", type, "'"));
  }
  for (const char* affix :
       {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!StringField(model, affix).empty()) {
      return Unsupported(path, absl::StrCat("model.", affix, " '",
                                            StringField(model, affix), "'"));
    }
  }
  if (const Value* dropout = Field(model, "dropout");
      dropout != nullptr && dropout->number_value() > 0) {
    return Unsupported(path, "model.dropout (encoding would be random)");
  }
  const icu::Normalizer2* nfc = nullptr;
  if (const Value* normalizer = Field(root, "normalizer");
      normalizer != nullptr && normalizer->has_struct_value()) {
    const std::string type = StringField(normalizer->struct_value(), "type");
    UErrorCode status = U_ZERO_ERROR;
    if (type == "NFC") nfc = icu::Normalizer2::getNFCInstance(status);
    if (nfc == nullptr || U_FAILURE(status)) {
      return Unsupported(path, absl::StrCat("normalizer '", type, "'"));
    }
  }
  ASSIGN_OR_RETURN(const std::string pattern, PreTokenizerPattern(path, root));
  std::unique_ptr<Gpt2Bpe> bpe(new Gpt2Bpe(pattern));
  if (!bpe->pattern_error_.empty()) {
    return Unsupported(path, absl::StrCat("pre-tokenizer pattern ", pattern,
                                          ": ", bpe->pattern_error_));
  }

  // Added tokens keep their ids; those in model.vocab (GPT-2's and Pythia's
  // <|endoftext|>) are already there.
  const Struct& vocabulary = StructField(model, "vocab");
  std::vector<std::pair<int, std::string>> added;
  for (const Value& token : ListField(root, "added_tokens").values()) {
    const std::string content = StringField(token.struct_value(), "content");
    const Value* id = Field(token.struct_value(), "id");
    if (id == nullptr || !id->has_number_value() ||
        id->number_value() != static_cast<int>(id->number_value())) {
      return Corrupt(
          path, absl::StrCat("added token '", content, "' has no integer id"));
    }
    auto in_vocabulary = vocabulary.fields().find(content);
    if (in_vocabulary == vocabulary.fields().end()) {
      added.emplace_back(static_cast<int>(id->number_value()), content);
    } else if (in_vocabulary->second.number_value() != id->number_value()) {
      return Corrupt(path, absl::StrCat("added token '", content, "' has id ",
                                        id->number_value(), ", model.vocab ",
                                        in_vocabulary->second.number_value()));
    }
  }
  ASSIGN_OR_RETURN(const auto id_of_piece,
                   bpe->SetVocabulary(path, vocabulary, added,
                                      /*require_end_of_text=*/false));
  bpe->nfc_ = nfc != nullptr;

  const Value* merges = Field(model, "merges");
  if (merges == nullptr || !merges->has_list_value()) {
    return Corrupt(path, "no model.merges (a BPE model's list of merges)");
  }
  for (int rank = 0; rank < merges->list_value().values_size(); ++rank) {
    // "a b" (tokenizers before 0.20) or ["a", "b"].
    const Value& merge = merges->list_value().values(rank);
    std::vector<std::string> pair;
    if (merge.has_list_value()) {
      for (const Value& piece : merge.list_value().values()) {
        pair.push_back(piece.string_value());
      }
    } else {
      for (absl::string_view piece :
           absl::StrSplit(merge.string_value(), ' ')) {
        pair.emplace_back(piece);
      }
    }
    if (pair.size() != 2 ||
        !bpe->AddMerge(id_of_piece, pair[0], pair[1], rank)) {
      return Corrupt(
          path, absl::StrCat("merge ", rank, " ('", absl::StrJoin(pair, " "),
                             "') is not two pieces of model.vocab "
                             "whose concatenation is one"));
    }
  }
  ASSIGN_OR_RETURN(bpe->bos_id_, BeginOfTextId(path, root, id_of_piece));
  if (BoolField(model, "ignore_merges")) {
    for (int id = 0; id < bpe->vocab_size(); ++id) {
      if (vocabulary.fields().contains(bpe->pieces_[id])) {
        bpe->whole_pieces_.emplace(bpe->bytes_[id], id);
      }
    }
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
    // Text no alternative matches is a pre-token of its own (Split's
    // Isolated); GPT-2's and Llama 3's patterns match every character.
    const size_t start = match[0].data() - input.data();
    if (start > position) {
      pre_tokens.emplace_back(text.data() + position, start - position);
    }
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
    position = start + length;
  }
  if (position < text.size()) pre_tokens.push_back(text.substr(position));
  return pre_tokens;
}

std::vector<int> Gpt2Bpe::Merge(absl::string_view pre_token) const {
  if (auto whole = whole_pieces_.find(pre_token);
      whole != whole_pieces_.end()) {
    return {whole->second};
  }
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
  const std::string valid =
      nfc_ ? Nfc(ReplaceInvalidUtf8(text)) : ReplaceInvalidUtf8(text);
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

std::string Gpt2Bpe::WordOfPiece(int id) const {
  if (id < 0 || id >= vocab_size()) return "";
  const std::string& bytes = bytes_[id];
  return bytes.size() > 1 && bytes[0] == ' ' && bytes[1] != ' '
             ? bytes.substr(1)
             : "";
}

std::vector<int> Gpt2Bpe::EncodeWord(const std::string& word) const {
  return Encode(" " + word);
}

}  // namespace sparse_layers::datasets
