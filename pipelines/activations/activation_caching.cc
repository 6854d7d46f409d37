#include "pipelines/activations/activation_caching.h"

#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/common/digest.h"
#include "base/common/status_macros.h"
#include "datasets/text/shard_pairing.h"
#include "datasets/text/token_shards.h"
#include "google/protobuf/text_format.h"
#include "models/hook_lookup.h"
#include "models/model_loader.h"
#include "pipelines/activations/activation_shards.h"

namespace sparse_layers::datasets {

int64_t ActivationCacheBatches(int64_t rows, int batch, int length,
                               int64_t eval_windows) {
  return std::min<int64_t>(
      (rows + int64_t{batch} * length - 1) / (int64_t{batch} * length),
      eval_windows / batch);
}

int64_t ActivationRowsToTake(int64_t wanted, int batch, int length,
                             bool whole_windows) {
  int64_t take = std::min<int64_t>(wanted, batch * length);
  // Attention replacements read whole windows (Lorsa mixes positions).
  if (whole_windows) take -= take % length;
  return take;
}

absl::StatusOr<ActivationManifest> CacheActivations(
    const ActivationCacheOptions& options, StagedOutputs& staged) {
  ASSIGN_OR_RETURN(layers::LoadedModel loaded,
                   layers::LoadModel(options.checkpoint));
  layers::GptImpl& model = *loaded.model;
  const int layer = options.layer;
  if (layer < 0 || layer >= static_cast<int>(model.blocks.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("--layer ", layer, " is not a block of the model"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<TokenShardSet> shards,
                   TokenShardSet::Open(options.tokens));
  RETURN_IF_ERROR(CheckFitsModelVocabulary(*shards, model.options().vocab_size,
                                           options.checkpoint));
  const int length = options.sequence_length > 0
                         ? options.sequence_length
                         : model.options().context_length;
  if (length > model.options().context_length) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--sequence_length ", length, " exceeds the model's context of ",
        model.options().context_length));
  }
  const int batch = options.batch;
  ASSIGN_OR_RETURN(const BatchSampler sampler,
                   BatchSampler::Create(shards.get(), batch, length,
                                        loaded.config.runtime().seed()));
  const int64_t wanted = options.rows;
  const int64_t batches =
      ActivationCacheBatches(wanted, batch, length, sampler.EvalWindowCount());
  if (batches <= 0) {
    return absl::FailedPreconditionError("the split holds no full batch");
  }

  ActivationManifest header;
  header.set_split(shards->manifest().split());
  header.set_layer(layer);
  const std::string& site = options.site;
  header.set_hook_in(absl::StrCat("blocks.", layer, ".", site, ".hook_in"));
  header.set_hook_out(absl::StrCat("blocks.", layer, ".", site, ".hook_out"));
  header.set_d_in(model.options().d_model);
  header.set_d_out(model.options().d_model);
  header.set_sequence_length(length);
  ASSIGN_OR_RETURN(const std::string checkpoint_digest,
                   Sha256OfFile(options.checkpoint));
  header.set_checkpoint_sha256(checkpoint_digest);
  std::string config_text;
  google::protobuf::TextFormat::PrintToString(loaded.config, &config_text);
  header.set_config_sha256(Sha256Hex(config_text));
  header.set_tokens_manifest_sha256(
      Sha256Hex(shards->manifest().SerializeAsString()));
  // Shards and manifest, or (on an error) nothing.
  ASSIGN_OR_RETURN(const std::string out_dir,
                   staged.StageDirectory(options.out_dir));
  ActivationWriter writer(out_dir, header, options.shard_rows);

  std::vector<torch::Tensor> inputs, outputs;
  ASSIGN_OR_RETURN(layers::HookPoint* const hook_in,
                   layers::RequireHook(model, header.hook_in()));
  ASSIGN_OR_RETURN(layers::HookPoint* const hook_out,
                   layers::RequireHook(model, header.hook_out()));
  hook_in->Add(layers::CaptureHook(&inputs));
  hook_out->Add(layers::CaptureHook(&outputs));
  torch::NoGradGuard no_grad;
  int64_t written = 0;
  for (int64_t i = 0; i < batches && written < wanted; ++i) {
    const TokenBatch tokens = sampler.EvalBatch(i, batches);
    inputs.clear();
    outputs.clear();
    model.Hidden(torch::from_blob(const_cast<int64_t*>(tokens.inputs.data()),
                                  {batch, length}, torch::kLong));
    const int64_t take =
        ActivationRowsToTake(wanted - written, batch, length, site == "attn");
    if (take == 0) break;
    const int64_t d = model.options().d_model;
    RETURN_IF_ERROR(
        writer.Append(inputs.at(0).reshape({-1, d}).slice(0, 0, take),
                      outputs.at(0).reshape({-1, d}).slice(0, 0, take)));
    written += take;
  }
  return writer.Finish();
}

}  // namespace sparse_layers::datasets
