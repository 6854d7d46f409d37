#include "ops/core/grouped_linear.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/backend/batched_gemm.h"

namespace sparse_layers::layers {
namespace {

// Every call cuts its products into about this many pieces of equal FLOPs,
// whatever the thread count, so the same sgemm calls run on 1 thread or many
// (16 pieces leave 2 threads at most 1/32 apart).
constexpr int64_t kPieces = 16;

// Pieces start at multiples of this many rows: OpenBLAS computes the rows of
// a block of its unroll (4 to 16 rows) together, and the last, partial block
// with other kernels whose sums round differently, so aligned cuts give each
// row the bits of one sgemm of the whole group.
constexpr int64_t kRowAlignment = 64;

// One product per group, to be cut along the rows of a and c.
struct GroupProduct {
  torch::Tensor a, b, c;
};

// Cuts each product into aligned row pieces of about total / kPieces FLOPs;
// an element of c keeps its whole sum.
std::vector<GemmTask> CutIntoPieces(const std::vector<GroupProduct>& products) {
  double total = 0;
  for (const GroupProduct& p : products) {
    total += double(p.a.size(0)) * p.a.size(1) * p.b.size(1);
  }
  const double target = std::max(1.0, total / kPieces);
  std::vector<GemmTask> tasks;
  for (const GroupProduct& p : products) {
    const int64_t rows = p.a.size(0);
    const double flops_per_row =
        std::max(1.0, double(p.a.size(1)) * p.b.size(1));
    const int64_t piece_rows =
        kRowAlignment *
        std::max<int64_t>(1,
                          std::llround(target / flops_per_row / kRowAlignment));
    int64_t begin = 0;
    do {
      // A remainder under 64 rows joins the last piece: alone, a piece of 8,
      // 16 or 32 rows would take OpenBLAS's small-matrix kernel, which does
      // not block K as the whole group's sgemm does.
      int64_t end = std::min(rows, begin + piece_rows);
      if (rows - end < kRowAlignment) end = rows;
      tasks.push_back({p.a.narrow(0, begin, end - begin), p.b,
                       p.c.narrow(0, begin, end - begin)});
      begin = end;
    } while (begin < rows);
  }
  return tasks;
}

std::vector<int64_t> GroupStarts(const std::vector<int64_t>& rows_per_group) {
  std::vector<int64_t> starts(rows_per_group.size() + 1, 0);
  std::partial_sum(rows_per_group.begin(), rows_per_group.end(),
                   starts.begin() + 1);
  return starts;
}

// W_g as the right operand of y_g = x_g @ (.): (in, out).
torch::Tensor RightOperand(const torch::Tensor& weight, int64_t g,
                           GroupWeightLayout layout) {
  return layout == GroupWeightLayout::kOutByIn ? weight[g].t() : weight[g];
}

class GroupedLinearFunction
    : public torch::autograd::Function<GroupedLinearFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& x_in,
                               const torch::Tensor& weight,
                               const std::vector<int64_t>& rows_per_group,
                               GroupWeightLayout layout) {
    // A named range: op profiles see the forward, which is no ATen op.
    RECORD_FUNCTION("GroupedLinear", std::vector<c10::IValue>());
    const torch::Tensor x = x_in.contiguous();
    ctx->save_for_backward({x, weight});
    ctx->saved_data["rows_per_group"] = rows_per_group;
    ctx->saved_data["layout"] = static_cast<int64_t>(layout);
    const int64_t out =
        layout == GroupWeightLayout::kOutByIn ? weight.size(1) : weight.size(2);
    torch::Tensor y = torch::empty({x.size(0), out}, x.options());
    const std::vector<int64_t> starts = GroupStarts(rows_per_group);
    std::vector<GroupProduct> products;
    for (size_t g = 0; g < rows_per_group.size(); ++g) {
      if (rows_per_group[g] == 0) continue;
      products.push_back({x.narrow(0, starts[g], rows_per_group[g]),
                          RightOperand(weight, g, layout),
                          y.narrow(0, starts[g], rows_per_group[g])});
    }
    IndependentGemms(CutIntoPieces(products), 0.0);
    return y;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grad_outputs) {
    RECORD_FUNCTION("GroupedLinearBackward", std::vector<c10::IValue>());
    TORCH_CHECK(!torch::GradMode::is_enabled(),
                "GroupedLinear is differentiable once (no create_graph)");
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &weight = saved[1];
    const std::vector<int64_t> rows_per_group =
        ctx->saved_data["rows_per_group"].toIntVector();
    const auto layout =
        static_cast<GroupWeightLayout>(ctx->saved_data["layout"].toInt());
    const torch::Tensor grad = grad_outputs[0].contiguous();  // (R, out)
    const std::vector<int64_t> starts = GroupStarts(rows_per_group);
    const bool want_x = ctx->needs_input_grad(0);
    const bool want_weight = ctx->needs_input_grad(1);
    torch::Tensor grad_x, grad_weight;
    if (want_x) grad_x = torch::empty(x.sizes(), x.options());
    // Row-major whatever the weight's strides: IndependentGemms writes rows.
    if (want_weight)
      grad_weight = torch::empty(weight.sizes(), weight.options());
    std::vector<GroupProduct> products;
    for (size_t g = 0; g < rows_per_group.size(); ++g) {
      const torch::Tensor x_g = x.narrow(0, starts[g], rows_per_group[g]);
      const torch::Tensor grad_g = grad.narrow(0, starts[g], rows_per_group[g]);
      // dL/dx_g = grad_g W_g^T (as y_g = x_g W_g with W_g (in, out)).
      if (want_x && rows_per_group[g] > 0) {
        products.push_back({grad_g, RightOperand(weight, g, layout).t(),
                            grad_x.narrow(0, starts[g], rows_per_group[g])});
      }
      // dL/dW_g in W's own layout: grad_g^T x_g (out, in) or x_g^T grad_g
      // (in, out); an expert without rows gets an empty sum, zero.
      if (want_weight) {
        if (layout == GroupWeightLayout::kOutByIn) {
          products.push_back({grad_g.t(), x_g, grad_weight[g]});
        } else {
          products.push_back({x_g.t(), grad_g, grad_weight[g]});
        }
      }
    }
    IndependentGemms(CutIntoPieces(products), 0.0);
    return {grad_x, grad_weight, torch::Tensor(), torch::Tensor()};
  }
};

void CheckShapes(const torch::Tensor& x, const torch::Tensor& weight,
                 const std::vector<int64_t>& rows_per_group,
                 GroupWeightLayout layout) {
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 3,
              "GroupedLinear: x (R, in) and weight (G, ., .), got ", x.sizes(),
              " and ", weight.sizes());
  TORCH_CHECK(weight.size(0) == static_cast<int64_t>(rows_per_group.size()),
              "GroupedLinear: ", weight.size(0), " matrices for ",
              rows_per_group.size(), " groups");
  const int64_t in =
      layout == GroupWeightLayout::kOutByIn ? weight.size(2) : weight.size(1);
  TORCH_CHECK(x.size(1) == in, "GroupedLinear: x has ", x.size(1),
              " columns, the matrices take ", in);
  int64_t rows = 0;
  for (int64_t r : rows_per_group) {
    TORCH_CHECK(r >= 0, "GroupedLinear: a group of ", r, " rows");
    rows += r;
  }
  TORCH_CHECK(rows == x.size(0), "GroupedLinear: the groups hold ", rows,
              " rows, x has ", x.size(0));
}

}  // namespace

torch::Tensor GroupedLinear(const torch::Tensor& x, const torch::Tensor& weight,
                            const std::vector<int64_t>& rows_per_group,
                            GroupWeightLayout layout) {
  CheckShapes(x, weight, rows_per_group, layout);
  const bool blas =
      x.device().is_cpu() && weight.device().is_cpu() &&
      x.scalar_type() == weight.scalar_type() &&
      (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
  if (!blas) return GroupedLinearReference(x, weight, rows_per_group, layout);
  return GroupedLinearFunction::apply(x, weight, rows_per_group, layout);
}

torch::Tensor GroupedLinearReference(const torch::Tensor& x,
                                     const torch::Tensor& weight,
                                     const std::vector<int64_t>& rows_per_group,
                                     GroupWeightLayout layout) {
  CheckShapes(x, weight, rows_per_group, layout);
  const std::vector<torch::Tensor> rows_of = x.split_with_sizes(rows_per_group);
  const std::vector<torch::Tensor> matrices = weight.unbind(0);
  std::vector<torch::Tensor> outputs;
  for (size_t g = 0; g < rows_per_group.size(); ++g) {
    outputs.push_back(torch::matmul(
        rows_of[g],
        layout == GroupWeightLayout::kOutByIn ? matrices[g].t() : matrices[g]));
  }
  return torch::cat(outputs);
}

}  // namespace sparse_layers::layers
