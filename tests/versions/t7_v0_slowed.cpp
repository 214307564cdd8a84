// Test-only version: v0 made slower on purpose by a declared parameter, for the verdict tests
// (tests/test_verdicts.cpp, tests/test_ab.cpp). --param t7.slowdown=P (a whole percentage, default
// 0) makes every query search the first P % of the references a second time, with v0's own code:
// more of the same work, not a sleep. With P = 0 it is v0. (It was the variable KNN_SLOWDOWN_PCT,
// which a run now refuses, naming the parameter.)
#include <vector>

#include "core/registry.hpp"
#include "core/topk.hpp"

namespace {

volatile float g_sink;  // keeps the repeated searches from being optimised away

void slowed_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  const int again = int(p.n * ctx.env.params.integer("slowdown") / 100);
  knn::Problem part = p;
  part.n = again;
  std::vector<std::int32_t> idx(std::size_t(p.topk));
  std::vector<float> dist(std::size_t(p.topk));
  for (int q = 0; q < p.m; ++q) {
    knn::bruteforce_one_query(p, q, out);
    if (again == 0) continue;
    part.queries = p.queries + std::size_t(q) * p.dim;
    part.m = 1;
    knn::bruteforce_one_query(part, 0, knn::Neighbors{idx.data(), dist.data()});
    g_sink = dist[0];
  }
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "t7";
  d.title = "test only: v0, slower by t7.slowdown % more of its own work";
  d.family = knn::Family::cpu;
  d.params = {knn::ParamDecl::integer("slowdown", 0, 0, 100, "percent of the references each query searches a second time",
                                      "KNN_SLOWDOWN_PCT")};
  d.make = knn::query_only(slowed_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
