// Test helpers: autograd gradients against central finite differences, in
// double precision, on a few entries of each parameter (llm.c's habit of
// checking every kernel against a reference).
#ifndef SPARSE_LAYERS_OPS_TESTING_GRADIENT_CHECK_H_
#define SPARSE_LAYERS_OPS_TESTING_GRADIENT_CHECK_H_

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace sparse_layers::layers::testing {

// `loss` must be deterministic and use the (double) parameters; steps of 1e-6
// keep top-k selections fixed on generic inputs. Returns one message per
// mismatch (empty when every |autograd - finite difference| <= `tolerance`).
std::vector<std::string> CheckGradients(
    const std::function<torch::Tensor()>& loss,
    const std::vector<std::pair<std::string, torch::Tensor>>& parameters,
    int entries_per_parameter = 7, double tolerance = 1e-6);

// max |actual - reference| / max |reference|: relative error in the max norm,
// so entries near zero are judged against the tensor's scale, not their own.
double MaxRelativeError(const torch::Tensor& actual,
                        const torch::Tensor& reference);

}  // namespace sparse_layers::layers::testing

#endif  // SPARSE_LAYERS_OPS_TESTING_GRADIENT_CHECK_H_
