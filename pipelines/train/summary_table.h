// summary_table: trainer summaries (TrainingSummary, *.summary.textproto) and
// their merged configs (ExperimentConfig, *_config.textproto) as one tidy CSV,
// one row per run, so that reports read runs through the claims engine
// (analysis/claims) instead of parsing text protos themselves.
//
// A config belongs to the summary whose `name` equals the config's `name`.
// Fields are read by protobuf reflection: a summary field by name
// ("validation_perplexity"), a config field by dotted path
// ("model.layer_options.mohd_shared"); an unset field gives its default.
#ifndef SPARSE_LAYERS_PIPELINES_TRAIN_SUMMARY_TABLE_H_
#define SPARSE_LAYERS_PIPELINES_TRAIN_SUMMARY_TABLE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace sparse_layers::train {

struct SummaryTableOptions {
  // TrainingSummary fields, each "field" or "column=field" (the CSV column is
  // the field's name unless given).
  std::vector<std::string> fields;
  // ExperimentConfig dotted paths, each "path" or "column=path" (the column is
  // the path unless given, e.g. "seed=runtime.seed").
  std::vector<std::string> config_fields;
  // Columns of one value for every row, each "column=value" (e.g. "base=gelu":
  // the base a set of fits was made on, which neither file names).
  std::vector<std::string> constant_columns;
  // Column holding the summary's name without a trailing "_s<N>" (the arm a
  // seeded run belongs to, base/seeds/seeds.bzl); empty: no such column.
  std::string arm_column = "arm";
  // Name each run by its file (RunNameFromPath: the build target, e.g.
  // "gelu_s2") instead of the `name` inside it, for runs whose configs share
  // one name across seeds.
  bool name_from_path = false;
};

// One input file: its path (for errors) and contents.
struct SummaryTableInput {
  std::string path;
  std::string contents;
};

// The CSV: the header, then one row per summary, grouped by arm and in
// numeric seed order within an arm (dense_s2 before dense_s10). Each
// input is a TrainingSummary or an ExperimentConfig, told apart by which of
// the two it parses as. Errors: an input that parses as neither or both, an
// unknown or non-scalar field, two summaries or two configs with one name,
// and, when config_fields are asked for, a summary without a config or a
// config without a summary.
absl::StatusOr<std::string> SummaryTableCsv(
    const SummaryTableOptions& options,
    const std::vector<SummaryTableInput>& inputs);

// Reads the files at `paths`, then SummaryTableCsv.
absl::StatusOr<std::string> SummaryTableFromFiles(
    const SummaryTableOptions& options, const std::vector<std::string>& paths);

// "out/gelu_s2.summary.textproto" and "out/gelu_s2_config.textproto" ->
// "gelu_s2" (lm_checkpoint's and experiment_config's file names); an error for
// any other file name.
absl::StatusOr<std::string> RunNameFromPath(absl::string_view path);

// "dense_s12" -> "dense" (seeded_name's suffix removed); other names unchanged.
std::string StripSeedSuffix(absl::string_view name);

// The scalar at dotted `path` of `message` as CSV text: integers in decimal,
// floating point in the shortest form that reads back exactly, enums by name,
// bools as true/false, strings quoted where CSV needs it.
absl::StatusOr<std::string> ScalarAtPath(
    const google::protobuf::Message& message, absl::string_view path);

}  // namespace sparse_layers::train

#endif  // SPARSE_LAYERS_PIPELINES_TRAIN_SUMMARY_TABLE_H_
