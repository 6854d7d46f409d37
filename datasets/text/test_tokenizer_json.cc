#include "datasets/text/test_tokenizer_json.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/common/file_io.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace sparse_layers::datasets::tokenizer_json {

using google::protobuf::Value;

Value Text(const std::string& text) {
  Value value;
  value.set_string_value(text);
  return value;
}

Value Number(int number) {
  Value value;
  value.set_number_value(number);
  return value;
}

Value Bool(bool flag) {
  Value value;
  value.set_bool_value(flag);
  return value;
}

Value Object(std::vector<std::pair<std::string, Value>> fields) {
  Value value;
  for (auto& [name, field] : fields) {
    (*value.mutable_struct_value()->mutable_fields())[name] = std::move(field);
  }
  return value;
}

Value List(std::vector<Value> items) {
  Value value;
  for (Value& item : items) {
    *value.mutable_list_value()->add_values() = std::move(item);
  }
  return value;
}

Value ByteLevel(bool use_regex) {
  return Object({{"type", Text("ByteLevel")},
                 {"add_prefix_space", Bool(false)},
                 {"trim_offsets", Bool(true)},
                 {"use_regex", Bool(use_regex)}});
}

Value Llama3PreTokenizer() {
  constexpr char kPattern[] =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  return Object(
      {{"type", Text("Sequence")},
       {"pretokenizers",
        List({Object({{"type", Text("Split")},
                      {"pattern", Object({{"Regex", Text(kPattern)}})},
                      {"behavior", Text("Isolated")},
                      {"invert", Bool(false)}}),
              ByteLevel(false)})}});
}

Value BeginOfTextPostProcessor(const std::string& begin) {
  const Value first =
      Object({{"SpecialToken",
               Object({{"id", Text(begin)}, {"type_id", Number(0)}})}});
  const Value text = Object(
      {{"Sequence", Object({{"id", Text("A")}, {"type_id", Number(0)}})}});
  return Object(
      {{"type", Text("Sequence")},
       {"processors", List({Object({{"type", Text("ByteLevel")},
                                    {"trim_offsets", Bool(false)}}),
                            Object({{"type", Text("TemplateProcessing")},
                                    {"single", List({first, text})},
                                    {"pair", List({first, text})},
                                    {"special_tokens", Object({})}})})}});
}

std::string TokenizerJson(const google::protobuf::Struct& vocabulary,
                          const Merges& merges, bool pair_merges,
                          Value pre_tokenizer,
                          const std::vector<std::pair<int, std::string>>& added,
                          bool ignore_merges, Value post_processor) {
  if (post_processor.kind_case() == Value::KIND_NOT_SET) {
    post_processor.set_null_value(google::protobuf::NULL_VALUE);
  }
  std::vector<Value> merge_values, added_values;
  for (const auto& [left, right] : merges) {
    merge_values.push_back(pair_merges ? List({Text(left), Text(right)})
                                       : Text(absl::StrCat(left, " ", right)));
  }
  for (const auto& [id, content] : added) {
    added_values.push_back(Object({{"id", Number(id)},
                                   {"content", Text(content)},
                                   {"special", Bool(true)}}));
  }
  Value vocab;
  *vocab.mutable_struct_value() = vocabulary;
  Value normalizer;
  normalizer.set_null_value(google::protobuf::NULL_VALUE);
  const Value root =
      Object({{"version", Text("1.0")},
              {"added_tokens", List(std::move(added_values))},
              {"normalizer", std::move(normalizer)},
              {"pre_tokenizer", std::move(pre_tokenizer)},
              {"post_processor", std::move(post_processor)},
              {"model", Object({{"type", Text("BPE")},
                                {"continuing_subword_prefix", Text("")},
                                {"end_of_word_suffix", Text("")},
                                {"ignore_merges", Bool(ignore_merges)},
                                {"vocab", std::move(vocab)},
                                {"merges", List(std::move(merge_values))}})}});
  std::string json;
  EXPECT_TRUE(
      google::protobuf::util::MessageToJsonString(root.struct_value(), &json)
          .ok());
  return json;
}

std::string Gpt2TokenizerJson(const std::string& package_dir,
                              bool pair_merges) {
  absl::StatusOr<std::string> encoder =
      ReadFileToString(package_dir + "/encoder.json");
  absl::StatusOr<std::string> bpe =
      ReadFileToString(package_dir + "/vocab.bpe");
  google::protobuf::Struct vocabulary;
  if (!encoder.ok() || !bpe.ok() ||
      !google::protobuf::util::JsonStringToMessage(*encoder, &vocabulary)
           .ok()) {
    ADD_FAILURE() << "cannot read GPT-2's files in " << package_dir;
    return "";
  }
  Merges merges;
  for (absl::string_view line : absl::StrSplit(*bpe, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#version")) continue;
    const std::vector<std::string> pair = absl::StrSplit(line, ' ');
    merges.emplace_back(pair[0], pair[1]);
  }
  return TokenizerJson(vocabulary, merges, pair_merges, ByteLevel(true),
                       {{50256, "<|endoftext|>"}});
}

}  // namespace sparse_layers::datasets::tokenizer_json
