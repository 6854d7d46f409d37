#include "datasets/text/tokenizer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "datasets/text/gpt2_bpe.h"

namespace sparse_layers::datasets {
namespace {

constexpr char kPluginRunfile[] =
    "sparse_layers/datasets/text/sentencepiece_plugin.so";

using LoadFunction = Tokenizer* (*)(const std::string&, std::string*);
using TrainFunction = bool (*)(const std::string&, std::string*);

// The plugin from the runfiles of the running binary or test.
std::string FindPlugin() {
  if (const char* path = std::getenv("SPARSE_LAYERS_SENTENCEPIECE_PLUGIN")) {
    return path;
  }
  std::vector<std::string> roots;
  for (const char* variable : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* root = std::getenv(variable)) roots.push_back(root);
  }
  std::error_code error;
  const std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) roots.push_back(self.string() + ".runfiles");
  for (const std::string& root : roots) {
    const std::string candidate = root + "/" + kPluginRunfile;
    if (std::filesystem::exists(candidate, error)) return candidate;
  }
  return "";
}

void* Plugin(std::string* error) {
  static void* handle = [] {
    const std::string path = FindPlugin();
    // DEEPBIND: the plugin and libsentencepiece resolve their own
    // protobuf-lite.
    return path.empty()
               ? nullptr
               : dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  }();
  if (handle == nullptr) {
    const char* reason = dlerror();
    *error = std::string("cannot load the SentencePiece plugin (") +
             kPluginRunfile +
             " in the runfiles): " + (reason != nullptr ? reason : "not found");
  }
  return handle;
}

// The plugin's entry point `name`, or null with *error set.
template <typename Function>
Function PluginFunction(const char* name, std::string* error) {
  void* plugin = Plugin(error);
  if (plugin == nullptr) return nullptr;
  auto function = reinterpret_cast<Function>(dlsym(plugin, name));
  if (function == nullptr) {
    *error = std::string("SentencePiece plugin lacks ") + name;
  }
  return function;
}

}  // namespace

// One id per character of a fixed vocabulary (the chess datasets' 32
// characters, MoE-X arXiv:2503.07639 Sec. 5.1).
class CharacterTokenizer : public Tokenizer {
 public:
  CharacterTokenizer(std::string vocabulary, int eos_id)
      : vocabulary_(std::move(vocabulary)), eos_id_(eos_id) {}
  std::vector<int> Encode(const std::string& text) const override {
    std::vector<int> ids;
    for (char c : text) {
      const size_t id = vocabulary_.find(c);
      if (id != std::string::npos) ids.push_back(static_cast<int>(id));
    }
    return ids;
  }
  std::string Decode(const std::vector<int>& ids) const override {
    std::string text;
    for (int id : ids) text += Piece(id);
    return text;
  }
  std::string Piece(int id) const override {
    return id >= 0 && id < vocab_size() ? vocabulary_.substr(id, 1) : "";
  }
  int vocab_size() const override {
    return static_cast<int>(vocabulary_.size());
  }
  int eos_id() const override { return eos_id_; }

 private:
  std::string vocabulary_;
  int eos_id_;
};

std::string TokenizerDigestPath(const std::string& model_path) {
  return Gpt2Bpe::IsGpt2BpePath(model_path)
             ? Gpt2Bpe::VocabularyFile(model_path)
             : model_path;
}

std::unique_ptr<Tokenizer> Tokenizer::Load(const std::string& model_path,
                                           std::string* error) {
  if (model_path.size() > 6 &&
      model_path.compare(model_path.size() - 6, 6, ".chars") == 0) {
    // Line 1: the vocabulary in id order; line 2 (optional): the delimiter.
    std::ifstream in(model_path, std::ios::binary);
    std::string vocabulary, delimiter;
    if (!std::getline(in, vocabulary) || vocabulary.empty()) {
      *error = "cannot read a character vocabulary from " + model_path;
      return nullptr;
    }
    std::getline(in, delimiter);
    const size_t eos =
        delimiter.empty() ? std::string::npos : vocabulary.find(delimiter[0]);
    return std::make_unique<CharacterTokenizer>(
        vocabulary, eos == std::string::npos ? -1 : static_cast<int>(eos));
  }
  if (Gpt2Bpe::IsGpt2BpePath(model_path)) {
    absl::StatusOr<std::unique_ptr<Gpt2Bpe>> bpe = Gpt2Bpe::Load(model_path);
    if (!bpe.ok()) {
      *error = std::string(bpe.status().message());
      return nullptr;
    }
    return *std::move(bpe);
  }
  auto load = PluginFunction<LoadFunction>("SparseLayersLoadTokenizer", error);
  if (load == nullptr) return nullptr;
  return std::unique_ptr<Tokenizer>(load(model_path, error));
}

bool TrainSentencePiece(const std::string& arguments, std::string* error) {
  auto train =
      PluginFunction<TrainFunction>("SparseLayersTrainSentencePiece", error);
  return train != nullptr && train(arguments, error);
}

}  // namespace sparse_layers::datasets
