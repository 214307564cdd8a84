#pragma once
// Shared test helpers: generated problems, running a registered version through the runner's own
// measurement path, and checking a version's rows against v0's loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <unistd.h>

#include <utility>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "core/errors.hpp"
#include "core/topk.hpp"
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

// The message of the ConfigError that fn throws; "" when it throws none.
inline std::string config_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A fresh folder under the system's temporary folder (`stem`, the process and a counter), removed
// with everything in it afterwards.
struct TempFolder {
  std::filesystem::path path;
  explicit TempFolder(const std::string& stem) {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

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

// The values of version `id`'s declared parameters for one call, as the harness fills
// Environment::params: every default, then `set` (checked against the declarations: ParamError).
// Empty where the version is not registered in this build.
inline ParamValues params_for(const std::string& id, const std::map<std::string, std::string>& set = {}) {
  const VersionDesc* v = Registry::instance().find(id);
  return v == nullptr ? ParamValues() : ParamValues(id, v->params, set);
}

// Runs one version once (no warm-up) through measure_version and validates it; with its parameters'
// defaults where `env` carries no values (as the harness fills them for a call).
inline Result run_once(const VersionDesc& v, const Dataset& d, const Environment& given) {
  Environment env = given;
  if (env.params.empty()) env.params = ParamValues(v.id, v.params, {});
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

// A problem shape that a version answers row for row as v0's loop does.
struct RowCase {
  std::string name;
  int dim, m, n, topk;
  bool self_join = false;
  Distribution dist = Distribution::uniform;
  std::uint32_t integer_max = kDefaultIntegerMax;
  bool identical = false;  // every coordinate 0.375
};

inline void PrintTo(const RowCase& c, std::ostream* os) { *os << c.name; }

// Runs version `id` once on `device` on case `c` (inputs from seed_base + 7 n + dim) and checks
// every row against v0's loop: distances bit for bit and the same indices, up to the first row
// that differs; and that the call reported each phase of `phases` as many times as it says.
// `params`: the version's parameters set for the call (the others at their defaults); `answers_in`:
// the memory of the answer arrays handed to the version (pinned as the runner's when the run is); `examine`:
// the values examined first, as the harness does.
// Returns ctx.path (empty where the version is missing or skips the case: a failure).
inline std::string check_rows_against_v0(const std::string& id, const RowCase& c, std::uint64_t seed_base,
                                         const DeviceInfo& device, const std::map<std::string, std::size_t>& phases,
                                         const std::map<std::string, std::string>& params = {},
                                         HostMemory answers_in = HostMemory::pageable, bool examine = false) {
  const VersionDesc* v = Registry::instance().find(id);
  EXPECT_NE(v, nullptr) << id << " is not registered in a build that found a CUDA device";
  if (v == nullptr) return {};
  std::vector<float> refs(std::size_t(c.n) * c.dim, 0.375f), queries;
  const std::uint64_t seed = seed_base + std::uint64_t(c.n) * 7 + std::uint64_t(c.dim);
  if (!c.identical) generate_points(c.dist, seed, PointSet::references, c.dim, std::size_t(c.n), refs.data(), c.integer_max);
  if (!c.self_join) {
    queries.assign(std::size_t(c.m) * c.dim, 0.375f);
    if (!c.identical)
      generate_points(c.dist, seed, PointSet::queries, c.dim, std::size_t(c.m), queries.data(), c.integer_max);
  }
  Problem p{c.dim, c.m, c.n, c.topk, c.self_join ? refs.data() : queries.data(), refs.data(), c.self_join};
  if (examine)  // the values' range, as the harness examines it before every run (what the tensor-core paths read)
    p.values = examine_values(c.self_join ? nullptr : queries.data(), c.self_join ? 0 : queries.size(), refs.data(), refs.size());
  Environment env;
  env.devices = {device};
  env.params = ParamValues(id, v->params, params);
  if (const auto reason = v->supports(p, env)) {
    ADD_FAILURE() << id << " skipped " << c.name << ": " << *reason;
    return {};
  }
  std::vector<std::int32_t> want_i(p.result_slots());
  std::vector<float> want_d(p.result_slots());
  for (int q = 0; q < p.m; ++q) bruteforce_one_query(p, q, Neighbors{want_i.data(), want_d.data()});
  const HostArray got_i_array(p.result_slots(), answers_in), got_d_array(p.result_slots(), answers_in);
  EXPECT_EQ(got_i_array.mode(), answers_in) << "answer arrays of the memory asked for";
  std::int32_t* got_i = got_i_array.as<std::int32_t>();
  float* got_d = got_d_array.data();
  std::fill(got_i, got_i + p.result_slots(), -7);
  std::fill(got_d, got_d + p.result_slots(), -1.f);
  TimingSink timing;
  RunContext ctx{timing, env, {}, {}};
  v->make()->query(p, Neighbors{got_i, got_d}, ctx);
  resolve_path(ctx);  // v15 formats its path after the call
  for (const auto& [phase, times] : phases) EXPECT_EQ(timing.phases().count(phase), times) << phase;
  for (std::size_t at = 0; at < p.result_slots(); ++at) {
    EXPECT_EQ(got_d[at], want_d[at]) << c.name << " query " << at / p.topk << " rank " << at % p.topk << "\n" << ctx.path;
    EXPECT_EQ(got_i[at], want_i[at]) << c.name << " query " << at / p.topk << " rank " << at % p.topk;
    if (got_d[at] != want_d[at] || got_i[at] != want_i[at]) break;
  }
  return ctx.path;
}

}  // namespace knn::testing
