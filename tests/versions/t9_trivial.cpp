// Test-only version of trivial cost: it answers indices 0..topk-1 without computing a distance, so
// that a run of 1000 cases measures the harness's own bookkeeping. Run it with --no-validate.
#include "core/registry.hpp"

namespace {

void trivial_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext&) {
  for (int q = 0; q < p.m; ++q)
    for (int j = 0; j < p.topk; ++j) {
      out.indices[std::size_t(q) * p.topk + j] = j;
      out.distances[std::size_t(q) * p.topk + j] = 0;
    }
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "t9";
  d.title = "test only: trivial cost, answers indices 0..topk-1 (use --no-validate)";
  d.family = knn::Family::cpu;
  d.make = knn::query_only(trivial_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
