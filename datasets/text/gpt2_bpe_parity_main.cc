// gpt2_bpe_parity: encodes each case that gpt2_bpe_reference.js wrote
// ("<input>\t<bytes in hex>\t<ids>") with the C++ GPT-2 BPE, compares the ids
// one for one, checks decode(encode(x)) == x, prints the counts and fails on
// any mismatch.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/common/file_io.h"
#include "base/common/main.h"
#include "base/common/status_macros.h"
#include "datasets/text/gpt2_bpe.h"

namespace sparse_layers::datasets {
namespace {

// Where two space-separated id lists first differ, with a little context.
std::string FirstDifference(absl::string_view expected,
                            absl::string_view actual) {
  const std::vector<absl::string_view> a =
      absl::StrSplit(expected, ' ', absl::SkipEmpty());
  const std::vector<absl::string_view> b =
      absl::StrSplit(actual, ' ', absl::SkipEmpty());
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  auto window = [i](const std::vector<absl::string_view>& ids) {
    const size_t begin = i < 3 ? 0 : i - 3;
    const size_t end = std::min(ids.size(), i + 5);
    return absl::StrJoin(ids.begin() + std::min(begin, end), ids.begin() + end,
                         " ");
  };
  return absl::StrCat("at id ", i, ": reference [", window(a), "], C++ [",
                      window(b), "]");
}

absl::Status Run(const std::vector<std::string>& arguments) {
  if (arguments.size() != 2) {
    return absl::InvalidArgumentError(
        "usage: gpt2_bpe_parity <encoder.json> <reference cases>");
  }
  ASSIGN_OR_RETURN(const std::unique_ptr<Gpt2Bpe> bpe,
                   Gpt2Bpe::Load(arguments[0]));
  ASSIGN_OR_RETURN(const std::string reference, ReadFileToString(arguments[1]));

  struct Counts {
    int64_t cases = 0, ids = 0, mismatches = 0;
  };
  std::vector<std::pair<std::string, Counts>> inputs;
  int64_t cases = 0, mismatches = 0, round_trip_failures = 0;
  for (absl::string_view line :
       absl::StrSplit(reference, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
    if (fields.size() != 3 || fields[1].size() % 2 != 0 ||
        !std::all_of(fields[1].begin(), fields[1].end(),
                     absl::ascii_isxdigit)) {
      return absl::DataLossError(absl::StrCat(
          arguments[1], ": case ", cases + 1, " is not input\thex\tids"));
    }
    if (inputs.empty() || inputs.back().first != fields[0]) {
      inputs.emplace_back(std::string(fields[0]), Counts());
    }
    Counts& counts = inputs.back().second;
    const std::string text = absl::HexStringToBytes(fields[1]);
    const std::vector<int> encoded = bpe->Encode(text);
    const std::string actual = absl::StrJoin(encoded, " ");
    ++cases;
    ++counts.cases;
    counts.ids += encoded.size();
    if (actual != fields[2]) {
      ++counts.mismatches;
      if (++mismatches <= 5) {
        std::cout << "MISMATCH " << fields[0] << " case " << counts.cases
                  << " (" << absl::CHexEscape(text.substr(0, 60))
                  << "): " << FirstDifference(fields[2], actual) << "\n";
      }
    }
    // Invalid UTF-8 reads back as the text the encoder saw.
    if (bpe->Decode(encoded) != ReplaceInvalidUtf8(text)) {
      if (++round_trip_failures <= 5) {
        std::cout << "ROUND TRIP case " << cases << " ("
                  << absl::CHexEscape(text.substr(0, 60)) << ")\n";
      }
    }
  }
  for (const auto& [input, counts] : inputs) {
    std::cout << input << ": " << counts.cases << " cases, " << counts.ids
              << " ids, " << counts.mismatches << " mismatches\n";
  }
  std::cout << "all: " << cases << " cases, " << mismatches << " mismatches, "
            << round_trip_failures << " round-trip failures\n";
  if (cases == 0) return absl::DataLossError("no cases");
  if (mismatches > 0 || round_trip_failures > 0) {
    return absl::InternalError(absl::StrCat(
        mismatches, " of ", cases, " cases differ from the ",
        "reference encoder; ", round_trip_failures, " do not round-trip"));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  const std::vector<std::string> arguments = sparse_layers::ParseMainFlags(
      argc, argv, "gpt2_bpe_parity <encoder.json> <reference cases>");
  return sparse_layers::RunMain(
      [&] { return sparse_layers::datasets::Run(arguments); });
}
