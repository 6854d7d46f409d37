#include "pipelines/train/summary_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/common/file_io.h"
#include "base/common/status_macros.h"
#include "base/common/text_proto.h"
#include "config/experiment.pb.h"
#include "google/protobuf/descriptor.h"
#include "pipelines/train/training.pb.h"

namespace sparse_layers::train {
namespace {

using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

std::string CsvField(absl::string_view text) {
  if (text.find_first_of(",\"\n\r") == absl::string_view::npos) {
    return std::string(text);
  }
  return absl::StrCat("\"", absl::StrReplaceAll(text, {{"\"", "\"\""}}), "\"");
}

std::string FormatDouble(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  // Shortest text that reads back as the same double: no digits lost, none
  // invented.
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

// A requested column: its CSV name and the field path it reads.
struct Column {
  std::string name;
  std::string path;
};

absl::StatusOr<std::vector<Column>> ParseColumns(
    const std::vector<std::string>& specs) {
  std::vector<Column> columns;
  for (const std::string& spec : specs) {
    const std::vector<std::string> parts =
        absl::StrSplit(spec, absl::MaxSplits('=', 1));
    Column column = parts.size() == 2 ? Column{parts[0], parts[1]}
                                      : Column{parts[0], parts[0]};
    if (column.name.empty() || column.path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("field '", spec, "': expected field or column=field"));
    }
    columns.push_back(std::move(column));
  }
  return columns;
}

}  // namespace

std::string StripSeedSuffix(absl::string_view name) {
  const size_t at = name.rfind("_s");
  if (at == absl::string_view::npos || at + 2 == name.size()) {
    return std::string(name);
  }
  const absl::string_view digits = name.substr(at + 2);
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return std::string(name);
    }
  }
  return std::string(name.substr(0, at));
}

absl::StatusOr<std::string> ScalarAtPath(const Message& message,
                                         absl::string_view path) {
  // Errors name the message type: "TrainingSummary field 'x' ...".
  const std::string what =
      absl::StrCat(message.GetDescriptor()->name(), " field '", path, "'");
  const Message* current = &message;
  const std::vector<std::string> parts = absl::StrSplit(path, '.');
  for (size_t i = 0; i < parts.size(); ++i) {
    const FieldDescriptor* field =
        current->GetDescriptor()->FindFieldByName(parts[i]);
    if (field == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown ", what, ": ", current->GetDescriptor()->name(),
                       " has no field '", parts[i], "'"));
    }
    if (field->is_repeated()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " is repeated; only scalars can be columns"));
    }
    const Reflection* reflection = current->GetReflection();
    const bool last = i + 1 == parts.size();
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (last) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " is a message; name one of its fields"));
      }
      // An unset message reads as its default instance, so its fields print
      // their defaults.
      current = &reflection->GetMessage(*current, field);
      continue;
    }
    if (!last) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": '", parts[i], "' is not a message"));
    }
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        return absl::StrCat(reflection->GetInt32(*current, field));
      case FieldDescriptor::CPPTYPE_INT64:
        return absl::StrCat(reflection->GetInt64(*current, field));
      case FieldDescriptor::CPPTYPE_UINT32:
        return absl::StrCat(reflection->GetUInt32(*current, field));
      case FieldDescriptor::CPPTYPE_UINT64:
        return absl::StrCat(reflection->GetUInt64(*current, field));
      case FieldDescriptor::CPPTYPE_DOUBLE:
        return FormatDouble(reflection->GetDouble(*current, field));
      case FieldDescriptor::CPPTYPE_FLOAT:
        return FormatDouble(reflection->GetFloat(*current, field));
      case FieldDescriptor::CPPTYPE_BOOL:
        return std::string(reflection->GetBool(*current, field) ? "true"
                                                                : "false");
      case FieldDescriptor::CPPTYPE_ENUM:
        return reflection->GetEnum(*current, field)->name();
      case FieldDescriptor::CPPTYPE_STRING:
        return CsvField(reflection->GetString(*current, field));
      default:
        break;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
}

absl::StatusOr<std::string> SummaryTableCsv(
    const SummaryTableOptions& options,
    const std::vector<SummaryTableInput>& inputs) {
  ASSIGN_OR_RETURN(const std::vector<Column> fields,
                   ParseColumns(options.fields));
  ASSIGN_OR_RETURN(const std::vector<Column> config_fields,
                   ParseColumns(options.config_fields));

  std::vector<std::pair<std::string, std::string>> constants;
  for (const std::string& spec : options.constant_columns) {
    const size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("constant column '", spec, "' is not column=value"));
    }
    constants.emplace_back(spec.substr(0, equals), spec.substr(equals + 1));
  }
  std::vector<std::string> header;
  if (!options.arm_column.empty()) header.push_back(options.arm_column);
  for (const auto& [column, value] : constants) header.push_back(column);
  for (const Column& c : fields) header.push_back(c.name);
  for (const Column& c : config_fields) header.push_back(c.name);
  for (size_t i = 0; i < header.size(); ++i) {
    if (std::count(header.begin(), header.end(), header[i]) > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("column '", header[i], "' is asked for twice"));
    }
  }

  // name -> (path, message).
  std::map<std::string, std::pair<std::string, TrainingSummary>> summaries;
  std::map<std::string, std::pair<std::string, config::ExperimentConfig>>
      configs;
  for (const SummaryTableInput& input : inputs) {
    TrainingSummary summary;
    config::ExperimentConfig config;
    // Each error reads "line:<l>:<c>: ..." (the parse position in the file).
    const absl::Status summary_error =
        ParseTextProto(input.contents, "line", &summary);
    const absl::Status config_error =
        ParseTextProto(input.contents, "line", &config);
    const bool is_summary = summary_error.ok();
    const bool is_config = config_error.ok();
    if (is_summary == is_config) {
      return absl::InvalidArgumentError(
          is_summary ? absl::StrCat(input.path,
                                    ": parses as both a TrainingSummary and an "
                                    "ExperimentConfig; cannot tell which it is")
                     : absl::StrCat(input.path, ": neither a TrainingSummary (",
                                    summary_error.message(),
                                    ") nor an ExperimentConfig (",
                                    config_error.message(), ")"));
    }
    std::string name = is_summary ? summary.name() : config.name();
    if (options.name_from_path) {
      ASSIGN_OR_RETURN(name, RunNameFromPath(input.path));
    }
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(input.path, ": no name, so no row to put it in"));
    }
    if (is_summary) {
      auto [it, inserted] =
          summaries.emplace(name, std::pair(input.path, summary));
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat("two summaries named '", name, "': ", it->second.first,
                         " and ", input.path));
      }
    } else {
      auto [it, inserted] =
          configs.emplace(name, std::pair(input.path, config));
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat("two configs named '", name, "': ", it->second.first,
                         " and ", input.path));
      }
    }
  }
  if (summaries.empty()) {
    return absl::InvalidArgumentError("no training summary among the inputs");
  }
  if (!config_fields.empty()) {
    for (const auto& [name, config] : configs) {
      if (summaries.count(name) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config '", name, "' (", config.first, ") has no summary"));
      }
    }
  }

  std::string csv = absl::StrCat(absl::StrJoin(header, ","), "\n");
  // Rows grouped by arm, seeds in numeric order (dense_s2 before dense_s10).
  std::vector<std::tuple<std::string, int64_t, std::string>> order;
  for (const auto& entry : summaries) {
    const std::string& name = entry.first;
    const std::string arm = StripSeedSuffix(name);
    int64_t seed = -1;
    if (arm.size() < name.size() &&
        !absl::SimpleAtoi(name.substr(arm.size() + 2), &seed)) {
      seed = -1;
    }
    order.emplace_back(arm, seed, name);
  }
  std::sort(order.begin(), order.end());
  for (const auto& [arm, seed, name] : order) {
    const auto& summary = summaries.at(name);
    std::vector<std::string> row;
    if (!options.arm_column.empty()) {
      row.push_back(CsvField(arm));
    }
    for (const auto& [column, value] : constants)
      row.push_back(CsvField(value));
    for (const Column& c : fields) {
      ASSIGN_OR_RETURN(std::string value, ScalarAtPath(summary.second, c.path));
      row.push_back(std::move(value));
    }
    if (!config_fields.empty()) {
      const auto config = configs.find(name);
      if (config == configs.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("summary '", name, "' (", summary.first,
                         ") has no config named '", name, "'"));
      }
      for (const Column& c : config_fields) {
        ASSIGN_OR_RETURN(std::string value,
                         ScalarAtPath(config->second.second, c.path));
        row.push_back(std::move(value));
      }
    }
    absl::StrAppend(&csv, absl::StrJoin(row, ","), "\n");
  }
  return csv;
}

absl::StatusOr<std::string> RunNameFromPath(absl::string_view path) {
  absl::string_view base = path.substr(path.find_last_of('/') + 1);
  for (absl::string_view suffix : {".summary.textproto", "_config.textproto"}) {
    if (absl::ConsumeSuffix(&base, suffix) && !base.empty()) {
      return std::string(base);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path,
                   ": not <run>.summary.textproto or <run>_config.textproto, "
                   "so no run name"));
}

absl::StatusOr<std::string> SummaryTableFromFiles(
    const SummaryTableOptions& options, const std::vector<std::string>& paths) {
  std::vector<SummaryTableInput> inputs;
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
    inputs.push_back({path, std::move(contents)});
  }
  return SummaryTableCsv(options, inputs);
}

}  // namespace sparse_layers::train
