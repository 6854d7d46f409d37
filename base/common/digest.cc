#include "base/common/digest.h"

#include <openssl/evp.h>

#include <fstream>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace sparse_layers {

struct Sha256::Context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : context_(new Context) {
  EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr);
}

Sha256::~Sha256() = default;

void Sha256::Update(absl::string_view bytes) {
  EVP_DigestUpdate(context_->md, bytes.data(), bytes.size());
}

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context_->md, digest, &length);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), length));
}

std::string Sha256Hex(absl::string_view bytes) {
  Sha256 sha;
  sha.Update(bytes);
  return sha.HexDigest();
}

absl::StatusOr<std::string> Sha256OfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  Sha256 sha;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), buffer.size());
    sha.Update(absl::string_view(buffer.data(), in.gcount()));
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return sha.HexDigest();
}

absl::Status VerifySha256(absl::string_view bytes, absl::string_view expected,
                          absl::string_view subject,
                          absl::string_view recorder) {
  const std::string actual = Sha256Hex(bytes);
  if (actual == expected) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      subject, ": SHA-256 ", actual.substr(0, 12), "... differs from ",
      expected.empty() ? "the empty digest"
                       : absl::StrCat(expected.substr(0, 12), "..."),
      " recorded in ", recorder, " (the file changed after it was written)"));
}

}  // namespace sparse_layers
