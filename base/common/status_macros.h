// RETURN_IF_ERROR and ASSIGN_OR_RETURN for absl::Status code (as Abseil's
// internal status macros): one line per fallible call instead of four.
#ifndef SPARSE_LAYERS_BASE_COMMON_STATUS_MACROS_H_
#define SPARSE_LAYERS_BASE_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the status of `expr` (an absl::Status) from the enclosing function
// when it is not OK.
#define RETURN_IF_ERROR(expr)                       \
  do {                                              \
    if (absl::Status sparse_layers_status = (expr); \
        !sparse_layers_status.ok()) {               \
      return sparse_layers_status;                  \
    }                                               \
  } while (false)

// `lhs = *expr` for an absl::StatusOr `expr`, or returns its status when it is
// not OK. `lhs` may declare a variable: ASSIGN_OR_RETURN(auto x, Make());
#define ASSIGN_OR_RETURN(lhs, expr)                                        \
  SPARSE_LAYERS_ASSIGN_OR_RETURN_IMPL(                                     \
      SPARSE_LAYERS_STATUS_CONCAT(sparse_layers_statusor_, __LINE__), lhs, \
      expr)

#define SPARSE_LAYERS_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                                        \
  if (!statusor.ok()) return std::move(statusor).status();       \
  lhs = *std::move(statusor)

#define SPARSE_LAYERS_STATUS_CONCAT(a, b) \
  SPARSE_LAYERS_STATUS_CONCAT_INNER(a, b)
#define SPARSE_LAYERS_STATUS_CONCAT_INNER(a, b) a##b

#endif  // SPARSE_LAYERS_BASE_COMMON_STATUS_MACROS_H_
