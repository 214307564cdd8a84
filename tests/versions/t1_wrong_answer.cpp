// Test-only version, linked into knnbench-testbin and never into knnbench: answers every query
// with a neighbour that is not the nearest, so the harness's failure path and exit code 1 can
// be tested end to end.
#include "core/topk.hpp"
#include "core/registry.hpp"

namespace {

void wrong_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext&) {
  for (int q = 0; q < p.m; ++q) {
    knn::bruteforce_one_query(p, q, out);
    for (int j = 0; j < p.topk; ++j) {
      auto& idx = out.indices[std::size_t(q) * p.topk + j];
      idx = (idx + 1) % p.n;  // the next point instead: wrong unless it happens to tie
    }
  }
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "t1";
  d.title = "test only: shifts every neighbour index by one";
  d.family = knn::Family::cpu;
  d.supports = [](const knn::Problem& p, const knn::Environment&) -> std::optional<std::string> {
    if (p.n < 2) return std::string("needs n ≥ 2 to be wrong");
    return std::nullopt;
  };
  d.make = knn::query_only(wrong_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
