#include "config/config_loader.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/common/status_macros.h"
#include "config/config_validator.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "re2/re2.h"

namespace sparse_layers::config {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::TextFormat;

// One parsed file and where each of its fields was written.
struct ParsedSource {
  std::string name;
  std::unique_ptr<TextFormat::ParseInfoTree> locations =
      std::make_unique<TextFormat::ParseInfoTree>();
};

// Keeps the parser's first error; later ones are usually consequences of it.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (has_error_) return;
    has_error_ = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }
  void AddWarning(int, int, const std::string&) override {}

  bool has_error() const { return has_error_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  bool has_error_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

// The field name a text-proto line starts with ("  d_model: 12" -> "d_model").
std::string FieldOnLine(absl::string_view line) {
  std::string field;
  RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), R"(^\s*(\w+))",
                    &field);
  return field;
}

// Rewrites the parser's error position to the field it concerns: protobuf
// reports some errors (an unknown enum value) at the token after the field, and
// names the field only inside the message.
void LocateField(absl::string_view text, int& line, int& column,
                 const std::string& message, std::string& field) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (line < 0 || line >= static_cast<int>(lines.size())) return;
  field = FieldOnLine(lines[line]);
  std::string named;
  if (!RE2::PartialMatch(message, R"re(field (?:named )?"(\w+)")re", &named) ||
      named == field) {
    return;
  }
  field = named;
  const RE2 field_start("\\b(" + named + ")\\s*[:{]");
  for (int candidate = line; candidate >= 0; --candidate) {
    // Debian's RE2 (2022-06-01) takes re2::StringPiece, not absl::string_view.
    const re2::StringPiece text_line(lines[candidate].data(),
                                     lines[candidate].size());
    re2::StringPiece match;
    if (RE2::PartialMatch(text_line, field_start, &match)) {
      line = candidate;
      column = static_cast<int>(match.data() - lines[candidate].data());
      return;
    }
  }
}

absl::Status MergeText(absl::string_view text, ParsedSource& source,
                       ExperimentConfig& config) {
  TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(source.locations.get());
  if (parser.MergeFromString(std::string(text), &config)) {
    return absl::OkStatus();
  }
  int line = errors.line();
  int column = errors.column();
  std::string field;
  LocateField(text, line, column, errors.message(), field);
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s:%d:%d: field '%s': %s", source.name, line + 1, column + 1,
      field.empty() ? "?" : field, errors.message()));
}

// Checks value ranges and cross-field constraints; errors point at the field in
// the file that set it.
class Validator {
 public:
  explicit Validator(const std::vector<ParsedSource>& sources)
      : sources_(sources) {}

  // An error for the field at `path` (e.g. {"model", "n_heads"}).
  absl::Status Error(std::initializer_list<absl::string_view> path,
                     absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: field '%s': %s", Where(path), absl::StrJoin(path, "."), message));
  }

 private:
  // file:line:column of the deepest prefix of `path` written in any source,
  // preferring later files.
  std::string Where(std::initializer_list<absl::string_view> path) const {
    for (auto source = sources_.rbegin(); source != sources_.rend(); ++source) {
      const TextFormat::ParseInfoTree* tree = source->locations.get();
      const Descriptor* descriptor = ExperimentConfig::descriptor();
      std::string best;
      for (absl::string_view name : path) {
        const FieldDescriptor* field =
            descriptor->FindFieldByName(std::string(name));
        if (field == nullptr || tree == nullptr) break;
        TextFormat::ParseLocation location = tree->GetLocation(field, -1);
        if (location.line < 0) break;
        best = absl::StrFormat("%s:%d:%d", source->name, location.line + 1,
                               location.column + 1);
        if (field->message_type() == nullptr) break;
        tree = tree->GetTreeForNested(field, -1);
        descriptor = field->message_type();
      }
      if (!best.empty()) return best;
    }
    return sources_.empty() ? "<config>" : sources_.back().name + ":1:1";
  }

  const std::vector<ParsedSource>& sources_;
};

absl::Status Validate(const ExperimentConfig& config,
                      const std::vector<ParsedSource>& sources) {
  const Validator v(sources);
  return ValidateExperimentConfig(
      config,
      [&v](std::initializer_list<absl::string_view> path,
           absl::string_view message) { return v.Error(path, message); });
}

// A file that sets no field is a mistake (an empty or truncated file, a wrong
// path), never a config: merging it would silently change nothing.
absl::Status RejectEmpty(absl::string_view text, absl::string_view name) {
  ExperimentConfig alone;
  TextFormat::Parser parser;
  parser.AllowPartialMessage(true);
  if (parser.ParseFromString(std::string(text), &alone) &&
      alone.ByteSizeLong() == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: empty config (it sets no field)", name));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  if (std::error_code error; std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: is a directory, not a config file", path));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrFormat("%s: cannot read config (%s)",
                                               path, std::strerror(errno)));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

}  // namespace

absl::StatusOr<ExperimentConfig> ParseExperimentConfig(
    absl::string_view text, absl::string_view source_name) {
  std::vector<ParsedSource> sources(1);
  sources[0].name = std::string(source_name);
  ExperimentConfig config;
  RETURN_IF_ERROR(MergeText(text, sources[0], config));
  RETURN_IF_ERROR(RejectEmpty(text, source_name));
  RETURN_IF_ERROR(Validate(config, sources));
  return config;
}

absl::StatusOr<ExperimentConfig> LoadExperimentConfig(
    absl::Span<const std::string> paths) {
  if (paths.empty()) {
    return absl::InvalidArgumentError("no config file given");
  }
  std::vector<ParsedSource> sources(paths.size());
  ExperimentConfig config;
  for (size_t i = 0; i < paths.size(); ++i) {
    ASSIGN_OR_RETURN(const std::string text, ReadFile(paths[i]));
    sources[i].name = paths[i];
    RETURN_IF_ERROR(MergeText(text, sources[i], config));
    RETURN_IF_ERROR(RejectEmpty(text, paths[i]));
  }
  RETURN_IF_ERROR(Validate(config, sources));
  return config;
}

int TrainingWindowLength(const ExperimentConfig& config) {
  return config.data().sequence_length() > 0 ? config.data().sequence_length()
                                             : config.model().context_length();
}

}  // namespace sparse_layers::config
