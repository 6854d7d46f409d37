// cache_activations: runs a trained model over a token split and stores the
// (FFN input, FFN output) pair, or the (attention input, attention output)
// pair, of every position at one block (pipelines/activations/
// activation_caching.h), so each replacement layer trains on the same pairs
// without rerunning the model.
//
//   cache_activations --checkpoint=lm.pt --tokens=.../test.tokens.textproto
//       --layer=2 --rows=65536 --out_dir=cache/
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/common/cpu_slots.h"
#include "base/common/main.h"
#include "base/common/staged_outputs.h"
#include "base/common/status_macros.h"
#include "ops/backend/torch_init.h"
#include "pipelines/activations/activation_caching.h"

ABSL_FLAG(std::string, checkpoint, "", "Trained model (.pt)");
ABSL_FLAG(std::string, tokens, "", "Token shard manifest of one split");
ABSL_FLAG(int, layer, 0, "Block whose sub-layer input and output are cached");
ABSL_FLAG(std::string, site, "ffn",
          "Sub-layer: ffn (normalised FFN input -> FFN output) or attn "
          "(normalised attention input -> attention output, whole windows)");
ABSL_FLAG(int64_t, rows, 65536, "Rows (token positions) to cache");
ABSL_FLAG(int, sequence_length, 0, "Window length (0: the model's context)");
ABSL_FLAG(int, batch, 8, "Windows per forward pass");
ABSL_FLAG(int64_t, shard_rows, 1 << 17, "Rows per shard file");
ABSL_FLAG(std::string, out_dir, "", "Output directory");

namespace sparse_layers::datasets {
namespace {

absl::Status Run() {
  RETURN_IF_ERROR(FirstError(
      {RequiredFile(FLAGS_checkpoint), RequiredFile(FLAGS_tokens),
       RequiredFlag(FLAGS_out_dir), FlagAtLeast(FLAGS_rows, 1),
       FlagAtLeast(FLAGS_sequence_length, 0), FlagAtLeast(FLAGS_batch, 1),
       FlagAtLeast(FLAGS_shard_rows, 1)}));
  ActivationCacheOptions options;
  options.site = absl::GetFlag(FLAGS_site);
  if (options.site != "ffn" && options.site != "attn") {
    return absl::InvalidArgumentError(
        absl::StrCat("--site ", options.site, ": use ffn or attn"));
  }
  RETURN_IF_ERROR(AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads)));
  options.checkpoint = absl::GetFlag(FLAGS_checkpoint);
  options.tokens = absl::GetFlag(FLAGS_tokens);
  options.out_dir = absl::GetFlag(FLAGS_out_dir);
  options.layer = absl::GetFlag(FLAGS_layer);
  options.rows = absl::GetFlag(FLAGS_rows);
  options.sequence_length = absl::GetFlag(FLAGS_sequence_length);
  options.batch = absl::GetFlag(FLAGS_batch);
  options.shard_rows = absl::GetFlag(FLAGS_shard_rows);
  StagedOutputs staged;
  ASSIGN_OR_RETURN(const ActivationManifest manifest,
                   CacheActivations(options, staged));
  RETURN_IF_ERROR(staged.Commit());
  std::fprintf(stderr,
               "cache_activations: %lld rows of blocks.%d.%s (%s split) in "
               "%d shards\n",
               static_cast<long long>(manifest.rows()), options.layer,
               options.site.c_str(), manifest.split().c_str(),
               manifest.shards_size());
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Caches one block's FFN input/output pairs.");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
