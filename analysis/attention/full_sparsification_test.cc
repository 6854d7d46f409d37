#include "analysis/attention/full_sparsification.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include "layers/attention/lorsa.h"

namespace sparse_layers::analysis {
namespace {

layers::Lorsa SmallLorsa() {
  layers::LorsaOptions options;
  options.d_model = 16;
  options.qk_heads = 4;
  options.qk_dim = 4;
  options.ov_heads = 16;
  options.top_k = 5;
  options.context_length = 12;
  torch::manual_seed(3);
  layers::Lorsa lorsa(options);
  lorsa->eval();
  return lorsa;
}

// Removing each head in turn removes its own z w_o: the removed parts sum to
// the output without its bias, and a head that never fires removes nothing.
TEST(AblatedLorsaTest, EachHeadRemovesItsOwnContribution) {
  layers::Lorsa lorsa = SmallLorsa();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 10, 16});
  const layers::LorsaOutput full = lorsa->Run(x, 5);
  torch::Tensor removed = torch::zeros_like(full.output);
  int64_t silent = -1;
  for (int64_t h = 0; h < 16; ++h) {
    AblatedLorsaImpl ablated(lorsa, h);
    const torch::Tensor out = ablated.forward(x);
    removed += full.output - out;
    if (!(full.activations.select(-1, h) != 0).any().item<bool>()) {
      silent = h;
      EXPECT_TRUE(torch::equal(out, full.output)) << h;
    }
  }
  EXPECT_TRUE(torch::allclose(removed, full.output - lorsa->b_o, 1e-5, 1e-5));
  // The heads' selection is unchanged: only head 0's share differs.
  AblatedLorsaImpl first(lorsa, 0);
  const torch::Tensor expected =
      full.output -
      full.activations.select(-1, 0).unsqueeze(-1) * lorsa->w_o[0];
  EXPECT_TRUE(torch::allclose(first.forward(x), expected, 1e-6, 1e-6));
  (void)silent;
}

}  // namespace
}  // namespace sparse_layers::analysis
