// v0: the seeds' serial CPU algorithm, and the reference every other version is validated against.
// One thread; for each query, every reference is visited in order and the squared distance is
// compared with a strict `<`, so the first of equal minima wins. Any topk is supported.
#include "core/topk.hpp"
#include "core/registry.hpp"

namespace {

void v0_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& /*ctx*/) {
  for (int q = 0; q < p.m; ++q) knn::bruteforce_one_query(p, q, out);
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v0";
  d.title = "CPU serial brute force (reference)";
  d.family = knn::Family::cpu;
  d.self_join = true;
  d.make = knn::query_only(v0_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
