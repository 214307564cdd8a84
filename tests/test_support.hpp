#pragma once
// Shared test helpers: generated problems and running a registered version through the runner's
// own measurement path.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data.hpp"
#include "core/environment.hpp"
#include "host_memory.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "result.hpp"
#include "measure.hpp"
#include "selection.hpp"
#include "validate.hpp"

namespace knn::testing {

// A problem with generated inputs; owns its buffers.
struct Dataset {
  std::vector<float> queries, references;
  Problem problem;
  Dataset(int dim, int m, int n, int topk, Distribution dist, std::uint64_t seed) : queries(std::size_t(m) * dim), references(std::size_t(n) * dim) {
    generate_points(dist, seed, PointSet::queries, dim, m, queries.data());
    generate_points(dist, seed, PointSet::references, dim, n, references.data());
    problem = Problem{dim, m, n, topk, queries.data(), references.data()};
  }
  // Hand-made inputs.
  Dataset(int dim, int topk, std::vector<float> q, std::vector<float> r) : queries(std::move(q)), references(std::move(r)) {
    problem = Problem{dim, int(queries.size() / dim), int(references.size() / dim), topk, queries.data(), references.data()};
  }
  std::vector<std::int32_t> reference_answer() const {
    std::vector<std::int32_t> idx(problem.result_slots());
    std::vector<float> dist(problem.result_slots());
    compute_reference(problem, Neighbors{idx.data(), dist.data()});
    return idx;
  }
};

// Sets an environment variable for one scope (unsets it when `value` is empty), then restores it.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value.empty())
      unsetenv(name_.c_str());
    else
      setenv(name_.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Runs one version once (no warm-up) through measure_version and validates it.
inline Result run_once(const VersionDesc& v, const Dataset& d, const Environment& env) {
  MeasureOptions o;
  o.warmup = 0;
  o.min_samples = 1;
  o.max_samples = 1;
  o.min_time_s = 0;
  o.max_time_s = 600;
  const Reference ref = compute_reference(d.problem, 0);
  Result r;
  measure_version(v, d.problem, env, o, &ref, r);
  return r;
}

}  // namespace knn::testing
