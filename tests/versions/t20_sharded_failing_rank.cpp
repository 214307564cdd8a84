// Test-only version, linked into knnbench-testbin and never into knnbench: v18's sharded search
// with the CPU engine, whose local search throws on the rank named by KNN_T20_FAIL_RANK. Tests
// that a failing rank makes the result "fail" with the rank and the reason, every rank goes on to
// the next version, and nothing hangs. It also names the value traits it was given (Problem::values)
// in its path, "values [known … highest …]", and throws on a rank whose traits are not
// KNN_T20_VALUES when that is set: under mpirun every rank must see those of the whole data.
#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/registry.hpp"
#include "kernels/sharded/sharded_search.hpp"

namespace {

void failing_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  const char* fail = std::getenv("KNN_T20_FAIL_RANK");
  const int failing = fail ? std::atoi(fail) : -1;
  const knn::ValueTraits& v = p.values;
  const std::string values = fmt::format("known {} whole {} finite {} lowest {:g} highest {:g}", v.known, v.whole, v.finite, v.lowest, v.highest);
  const char* want = std::getenv("KNN_T20_VALUES");
  const auto search = [&](const knn::Problem& sub, knn::Neighbors part) {
    if (ctx.env.rank == failing) throw std::runtime_error(fmt::format("injected failure (KNN_T20_FAIL_RANK={})", failing));
    if (want && *want && values != want) throw std::runtime_error(fmt::format("saw values {}: expected {}", values, want));
    knn::sharded::cpu_search(sub, part);
  };
  knn::sharded::query(p, out, ctx, search, "v0's loop; values [" + values + "]");
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "t20";
  d.title = "test only: v18's sharded search (CPU) failing on the rank KNN_T20_FAIL_RANK names, or where the values are not KNN_T20_VALUES";
  d.family = knn::Family::cpu;
  d.self_join = true;
  d.shards_references = true;
  d.supports = [](const knn::Problem&, const knn::Environment&) -> std::optional<std::string> {
    if (!knn::sharded::built_with_mpi()) return std::string("built without MPI");
    return std::nullopt;
  };
  d.make = knn::query_only(failing_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
