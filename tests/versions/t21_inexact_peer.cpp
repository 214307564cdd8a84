// Test-only peer, linked into knnbench-testbin and never into knnbench: answers exactly, except that
// every fourth query (0, 4, 8, ...) gets its farthest reference in its last slot instead of its
// topk-th nearest. A peer's wrong answer is graded, not failed: the result must be "inexact" with
// m/4 (rounded up) wrong queries and as many wrong neighbours, and the run must exit 0 (1 with
// --strict-peers).
#include <optional>
#include <string>

#include "core/registry.hpp"
#include "core/topk.hpp"

namespace {

void mostly_right(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  ctx.path = "exact, but the last neighbour of every fourth query is its farthest point";
  for (int q = 0; q < p.m; ++q) {
    knn::bruteforce_one_query(p, q, out);
    if (q % 4 != 0) continue;
    std::int32_t far = 0;
    float far_d = -1;
    for (std::int32_t r = 0; r < p.n; ++r) {
      const float d = knn::squared_distance(p.queries + std::size_t(q) * p.dim, p.references + std::size_t(r) * p.dim, p.dim);
      if (d > far_d) far_d = d, far = r;
    }
    out.indices[std::size_t(q) * p.topk + p.topk - 1] = far;
    out.distances[std::size_t(q) * p.topk + p.topk - 1] = far_d;
  }
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "p-test-inexact";
  d.title = "test only: a peer whose every fourth query has one wrong neighbour";
  d.family = knn::Family::peer;
  d.supports = [](const knn::Problem& p, const knn::Environment&) -> std::optional<std::string> {
    if (p.self_join) return std::string("does not answer self-joins");
    if (p.n <= p.topk) return std::string("needs n > topk to be wrong");
    return std::nullopt;
  };
  d.make = knn::query_only(mostly_right);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
