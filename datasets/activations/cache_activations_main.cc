// cache_activations: runs a trained model over a token split and stores the
// (FFN input, FFN output) pair, or the (attention input, attention output)
// pair, of every position at one block, so each replacement layer trains on
// the same pairs without rerunning the model (cached once, where the papers'
// code streams them; for Lorsa whole windows, so positions can be mixed
// again).
//
//   cache_activations --checkpoint=lm.pt --tokens=.../test.tokens.textproto
//       --layer=2 --rows=65536 --out_dir=cache/
#include <torch/torch.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "datasets/activations/activation_shards.h"
#include "datasets/text/token_shards.h"
#include "google/protobuf/text_format.h"
#include "layers/backend/torch_init.h"
#include "layers/models/model_loader.h"
#include "tools/common/cpu_slots.h"
#include "tools/common/digest.h"
#include "tools/common/staged_outputs.h"

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
  if (absl::Status s = FirstError(
          {RequiredFile(FLAGS_checkpoint), RequiredFile(FLAGS_tokens),
           RequiredFlag(FLAGS_out_dir), FlagAtLeast(FLAGS_rows, 1),
           FlagAtLeast(FLAGS_sequence_length, 0), FlagAtLeast(FLAGS_batch, 1),
           FlagAtLeast(FLAGS_shard_rows, 1)});
      !s.ok()) {
    return s;
  }
  if (absl::GetFlag(FLAGS_site) != "ffn" &&
      absl::GetFlag(FLAGS_site) != "attn") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--site ", absl::GetFlag(FLAGS_site), ": use ffn or attn"));
  }
  if (absl::Status s = AcquireCpuSlotIfRequested(absl::GetFlag(FLAGS_threads));
      !s.ok()) {
    return s;
  }
  const std::string checkpoint = absl::GetFlag(FLAGS_checkpoint);
  auto loaded = layers::LoadModel(checkpoint);
  if (!loaded.ok()) return loaded.status();
  layers::GptImpl& model = *loaded->model;
  const int layer = absl::GetFlag(FLAGS_layer);
  if (layer < 0 || layer >= static_cast<int>(model.blocks.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("--layer ", layer, " is not a block of the model"));
  }
  auto shards = TokenShardSet::Open(absl::GetFlag(FLAGS_tokens));
  if (!shards.ok()) return shards.status();
  const int length = absl::GetFlag(FLAGS_sequence_length) > 0
                         ? absl::GetFlag(FLAGS_sequence_length)
                         : model.options().context_length;
  if (length > model.options().context_length) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--sequence_length ", length, " exceeds the model's context of ",
        model.options().context_length));
  }
  const int batch = absl::GetFlag(FLAGS_batch);
  auto sampler = BatchSampler::Create(shards->get(), batch, length,
                                      loaded->config.runtime().seed());
  if (!sampler.ok()) return sampler.status();
  const int64_t wanted = absl::GetFlag(FLAGS_rows);
  const int64_t batches = std::min<int64_t>(
      (wanted + int64_t{batch} * length - 1) / (int64_t{batch} * length),
      sampler->EvalWindowCount() / batch);
  if (batches <= 0) {
    return absl::FailedPreconditionError("the split holds no full batch");
  }

  ActivationManifest header;
  header.set_split((*shards)->manifest().split());
  header.set_layer(layer);
  const std::string site = absl::GetFlag(FLAGS_site);
  header.set_hook_in(absl::StrCat("blocks.", layer, ".", site, ".hook_in"));
  header.set_hook_out(absl::StrCat("blocks.", layer, ".", site, ".hook_out"));
  header.set_d_in(model.options().d_model);
  header.set_d_out(model.options().d_model);
  header.set_sequence_length(length);
  auto checkpoint_digest = Sha256OfFile(checkpoint);
  if (!checkpoint_digest.ok()) return checkpoint_digest.status();
  header.set_checkpoint_sha256(*checkpoint_digest);
  std::string config_text;
  google::protobuf::TextFormat::PrintToString(loaded->config, &config_text);
  header.set_config_sha256(Sha256Hex(config_text));
  header.set_tokens_manifest_sha256(
      Sha256Hex((*shards)->manifest().SerializeAsString()));
  StagedOutputs staged;  // Shards and manifest, or (on an error) nothing.
  auto out_dir = staged.StageDirectory(absl::GetFlag(FLAGS_out_dir));
  if (!out_dir.ok()) return out_dir.status();
  ActivationWriter writer(*out_dir, header, absl::GetFlag(FLAGS_shard_rows));

  std::vector<torch::Tensor> inputs, outputs;
  model.FindHook(header.hook_in())->Add(layers::CaptureHook(&inputs));
  model.FindHook(header.hook_out())->Add(layers::CaptureHook(&outputs));
  torch::NoGradGuard no_grad;
  int64_t written = 0;
  for (int64_t i = 0; i < batches && written < wanted; ++i) {
    const TokenBatch tokens = sampler->EvalBatch(i, batches);
    inputs.clear();
    outputs.clear();
    model.Hidden(torch::from_blob(const_cast<int64_t*>(tokens.inputs.data()),
                                  {batch, length}, torch::kLong));
    int64_t take = std::min<int64_t>(wanted - written, batch * length);
    // Attention replacements read whole windows (Lorsa mixes positions).
    if (site == "attn") take -= take % length;
    if (take == 0) break;
    const int64_t d = model.options().d_model;
    if (absl::Status s =
            writer.Append(inputs.at(0).reshape({-1, d}).slice(0, 0, take),
                          outputs.at(0).reshape({-1, d}).slice(0, 0, take));
        !s.ok()) {
      return s;
    }
    written += take;
  }
  auto manifest = writer.Finish();
  if (!manifest.ok()) return manifest.status();
  if (absl::Status s = staged.Commit(); !s.ok()) return s;
  std::fprintf(stderr,
               "cache_activations: %lld rows of blocks.%d.%s (%s split) in "
               "%d shards\n",
               static_cast<long long>(manifest->rows()), layer, site.c_str(),
               manifest->split().c_str(), manifest->shards_size());
  return absl::OkStatus();
}

}  // namespace
}  // namespace sparse_layers::datasets

int main(int argc, char** argv) {
  sparse_layers::InitMain(argc, argv,
                          "Caches one block's FFN input/output pairs.");
  return sparse_layers::RunMain(sparse_layers::datasets::Run);
}
