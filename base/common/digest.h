// SHA-256 digests (OpenSSL libcrypto) for manifests: every dataset, tokenizer
// and checkpoint records the digests of what it was built from.
#ifndef SPARSE_LAYERS_BASE_COMMON_DIGEST_H_
#define SPARSE_LAYERS_BASE_COMMON_DIGEST_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sparse_layers {

// Incremental SHA-256.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(absl::string_view bytes);
  // Lower-case hex digest; the object must not be updated afterwards.
  std::string HexDigest();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

std::string Sha256Hex(absl::string_view bytes);
absl::StatusOr<std::string> Sha256OfFile(const std::string& path);

// Integrity on read: OK when `bytes` hash to `expected`, the digest that
// `recorder` (a manifest, a summary) holds for `subject`; else a DataLoss
// error naming both, so a changed or swapped file never loads silently.
absl::Status VerifySha256(absl::string_view bytes, absl::string_view expected,
                          absl::string_view subject,
                          absl::string_view recorder);

}  // namespace sparse_layers

#endif  // SPARSE_LAYERS_BASE_COMMON_DIGEST_H_
