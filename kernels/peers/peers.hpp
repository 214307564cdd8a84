#pragma once
// What the peer versions (kernels/peers/p_*.cpp: other libraries' exact kNN) share: the skip reason of a
// peer built without its library, and the row order every version answers in.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/order.hpp"
#include "core/problem.hpp"

// A number macro as a string literal: KNN_PEER_STR(FAISS_VERSION_MAJOR) is "1".
#define KNN_PEER_STR2(x) #x
#define KNN_PEER_STR(x) KNN_PEER_STR2(x)

namespace knn::peers {

// The reason a peer skips when knnbench was built without its library, with how to get it:
// "built without faiss (install: apt-get install libfaiss-dev, or scripts/setup/install-deps.sh; then rebuild)".
inline std::string built_without(const std::string& library, const std::string& install) {
  return "built without " + library + " (install: " + install + "; then rebuild)";
}

// nullopt when built with the library, the reason otherwise.
inline std::optional<std::string> unless_built(bool built, const std::string& library, const std::string& install) {
  if (built) return std::nullopt;
  return built_without(library, install);
}

// A library's row comes sorted by its own distances; among equal distances the order is the
// library's. Rows leave in knnbench's order: (distance, index), ties by the smaller index. Only
// runs of equal distances move.
inline void order_ties(const Problem& p, Neighbors out) {
#pragma omp parallel for schedule(static) if (p.m > 4096)
  for (int q = 0; q < p.m; ++q) {
    std::int32_t* idx = out.indices + std::size_t(q) * p.topk;
    float* dist = out.distances + std::size_t(q) * p.topk;
    for (int a = 0; a < p.topk;) {
      int b = a + 1;
      while (b < p.topk && dist[b] == dist[a]) ++b;
      if (b - a > 1) std::sort(idx + a, idx + b);
      a = b;
    }
  }
}

}  // namespace knn::peers
