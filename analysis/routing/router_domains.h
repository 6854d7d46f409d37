// Sub-dimension routing by domain (MoHD, arXiv:2412.05644 Sec. 5.4, Fig. 11:
// the average router probability of each specialised sub-dim per RedPajama
// domain). Held-out documents are grouped by their corpus source (our
// domains), each domain's documents dealt alternately into two halves, and
// every MoHD attention and FFN router of a model is read on them:
//   router_domains.csv:        per router, domain and specialised sub-dim: the
//                              mean router probability (softmax over the
//                              specialised sub-dims, the P_i of Eq. 13) and the
//                              share of the domain's routed slots it takes;
//   router_specialisation.csv: per router: the Jensen-Shannon divergence of the
//                              routed shares between domains against that
//                              between the two halves of one domain (the noise
//                              floor at the same token count), and the
//                              smallest and largest share over all tokens.
// Position 0 of each window (the sink) is left out.
#ifndef SPARSE_LAYERS_ANALYSIS_ROUTING_ROUTER_DOMAINS_H_
#define SPARSE_LAYERS_ANALYSIS_ROUTING_ROUTER_DOMAINS_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/text/domain_documents.h"
#include "models/gpt.h"

namespace sparse_layers::analysis {

struct RouterDomainOptions {
  // Tokens per domain, half in each half (the paper averages 4,096 tokens per
  // bar); a domain with fewer held-out tokens gives what it has.
  int64_t tokens_per_domain = 8192;
  int sequence_length = 128;  // Window length, capped at the model's context.
  int64_t seed = 1;           // Draws of a random-routing model.
};

// Jensen-Shannon divergence in bits (in [0, 1]) of two distributions of equal
// length, each summing to 1.
double JensenShannonBits(const torch::Tensor& p, const torch::Tensor& q);

struct Specialisation {
  double between = 0;  // Mean JS over domain pairs and their 4 half pairings.
  double within = 0;   // Mean JS between a domain's two halves.
};

// `shares[d][h]`: domain d's distribution on half h. Every JS compares two
// halves, so between and within rest on the same token counts and carry the
// same finite-sample bias.
Specialisation DomainSpecialisation(
    const std::vector<std::array<torch::Tensor, 2>>& shares);

// The two tables, one model at a time.
class RouterDomainTables {
 public:
  RouterDomainTables();
  // Every MoHD router of `model` (name: the model's column, seed its
  // training seed) on `domains`; a model without MoHD routers is an error.
  // Fewer than 2 domains (a corpus of one source) add no rows.
  absl::Status AddModel(const std::string& name, int64_t seed,
                        layers::GptImpl& model,
                        const std::vector<datasets::DomainTokens>& domains,
                        const RouterDomainOptions& options);
  const std::string& domains_csv() const { return domains_; }
  const std::string& specialisation_csv() const { return specialisation_; }

 private:
  std::string domains_, specialisation_;
};

}  // namespace sparse_layers::analysis

#endif  // SPARSE_LAYERS_ANALYSIS_ROUTING_ROUTER_DOMAINS_H_
