// Test-only versions for memory: t10 allocates 4 PiB inside its call (std::bad_alloc there must
// become a skip of that one result, with sizes, and the run must go on); t11 declares a working
// memory of 1 EiB (host_bytes), so the harness must skip it before any call.
#include <cstddef>
#include <vector>

#include "core/topk.hpp"
#include "core/registry.hpp"

namespace {

void greedy_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext&) {
  std::vector<char> scratch(std::size_t(1) << 52);  // throws std::bad_alloc
  scratch[0] = 1;
  for (int q = 0; q < p.m; ++q) knn::bruteforce_one_query(p, q, out);
}

knn::VersionDesc describe(const char* id, bool declares) {
  knn::VersionDesc d;
  d.id = id;
  d.title = declares ? "test only: declares 1 EiB of working memory" : "test only: allocates 4 PiB in its call";
  d.family = knn::Family::cpu;
  if (declares) d.host_bytes = [](const knn::Problem&, const knn::Environment&) { return std::size_t(1) << 60; };
  d.make = knn::query_only(greedy_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe("t10", false));
KNN_REGISTER_VERSION(describe("t11", true));
