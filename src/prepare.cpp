#include "prepare.hpp"

#include <fmt/format.h>

#include <new>
#include <utility>

#include "core/errors.hpp"
#include "data.hpp"
#include "datafile.hpp"
#include "measure.hpp"
#include "skip_reasons.hpp"
#include "sysinfo.hpp"
#include "value_range.hpp"

namespace knn {
void fill_point_rows(const Matrix& mx, const Case& c, PointSet set, std::size_t first, std::size_t count, float* out) {
  const bool queries = set == PointSet::queries;
  const std::string& path = queries ? c.queries_path : c.references_path;
  if (path.empty()) {
    generate_point_range(c.distribution, c.seed, set, c.dim, first, count, out, c.integer_max);
    return;
  }
  // The file was inspected when the matrix was loaded; one that no longer matches, or holds NaN or
  // Inf, is a ConfigError here (exit 2 in one process).
  try {
    const DataFileInfo info = inspect_data_file(path, std::uint64_t(c.dim));
    expect_shape(info, std::uint64_t(queries ? c.m : c.n), queries ? "m" : "n", std::uint64_t(c.dim));
    read_data_rows(info, first, count, out);
  } catch (const ConfigError& e) {
    throw ConfigError(data_file_problem(mx, c, set, e.what()));
  }
}

std::string data_file_problem(const Matrix& mx, const Case& c, PointSet set, const std::string& what) {
  return fmt::format("{}: case {}: {}: {}", mx.file, c.id, set == PointSet::queries ? "queries_file" : "references_file", what);
}

Result PreparedCase::result_for(const VersionDesc& v) const {
  Result r = base_;
  name_version(r, v);
  r.values = problem.values;  // for the floor (rates.hpp)
  return r;
}

Result PreparedCase::result_for(const PlanItem& item) const {
  Result r = result_for(*item.version);
  r.params = item.params.values();
  r.params_set = item.params.set_names();
  return r;
}

std::optional<std::string> PreparedCase::room_for(std::size_t query_floats, std::size_t reference_floats) {
  input_bytes = 4.0 * double(query_floats + reference_floats) + 8.0 * 2.0 * double(std::size_t(c.m) * c.topk);
  const double have = double(usable_host_memory());  // RLIMIT_AS and the cgroup's limit count
  if (have > 0 && input_bytes > 0.9 * have) return skip_reason::host_memory(input_bytes, have);
  return std::nullopt;
}

const Reference* PreparedCase::reference(Progress& progress) {
  if (reference_due_ && !reference_) {
    progress.step(c, "validation reference (v0 on every core)");
    reference_ = compute_reference(problem, validate_queries_);
    if (truth_) reference_->also = &*truth_;
  }
  return reference_ ? &*reference_ : nullptr;
}

std::optional<std::string> PreparedCase::allocate(std::size_t query_floats, std::size_t reference_floats, HostMemory mode,
                                                  const char* doing) {
  try {  // a limit the estimate missed (ulimit -v, overcommit) skips this case; the run goes on
    queries_.emplace(query_floats, mode);
    references_.emplace(reference_floats, mode);
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    queries_.reset();
    references_.reset();
    return skip_reason::out_of_host_memory(doing, input_bytes, double(usable_host_memory()));
  }
}

void PreparedCase::prepare_here(const Matrix& mx, HostMemory mode, bool validate, Progress& progress) {
  // A self-join has one point set: the references, which are also the queries.
  const std::size_t qf = c.self_join ? 0 : std::size_t(c.m) * c.dim, rf = std::size_t(c.n) * c.dim;
  if ((skip = room_for(qf, rf))) return;
  progress.step(c, c.queries_file.empty() && c.references_file.empty() ? "generating data" : "reading data");
  if ((skip = allocate(qf, rf, mode, "allocating the inputs"))) return;
  if (!c.self_join) fill_point_rows(mx, c, PointSet::queries, 0, std::size_t(c.m), queries_->data());
  fill_point_rows(mx, c, PointSet::references, 0, std::size_t(c.n), references_->data());
  const float* query_points = c.self_join ? references_->data() : queries_->data();
  refuse_overflowing_distances(mx.file, c, query_points, references_->data());
  base_.query_checksum = to_hex(checksum(query_points, std::size_t(c.m) * c.dim));
  base_.reference_checksum = to_hex(checksum(references_->data(), rf));
  problem = Problem{c.dim, c.m, c.n, c.topk, query_points, references_->data(), c.self_join};
  problem.values = examine_values(query_points, qf, references_->data(), rf);  // qf is 0 in a self-join
  if (validate) read_truth(mx);
  reference_due_ = validate;
}

void PreparedCase::read_truth(const Matrix& mx) {
  // The case's ground_truth_file, else an HDF5 queries file's own "neighbors" (their shape was
  // checked when the matrix was loaded; read_ground_truth checks it again, and every index).
  const std::string truth = !c.ground_truth_path.empty() ? c.ground_truth_path
                            : !c.queries_path.empty() && data_format_of(c.queries_path) == DataFormat::hdf5 ? c.queries_path
                                                                                                         : std::string();
  if (truth.empty()) return;
  Reference file_truth;
  try {
    if (!read_ground_truth(truth, std::uint64_t(c.m), std::uint64_t(c.n), c.topk, file_truth.indices)) return;  // HDF5 without "neighbors"
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: case {}: ground truth: {}", mx.file, c.id, e.what()));
  }
  file_truth.name = c.ground_truth_file.empty() ? "neighbors of " + data_file_on_disk(c.queries_file) : c.ground_truth_file;
  for (int q = 0; q < c.m; ++q) file_truth.rows.push_back(q);
  truth_ = std::move(file_truth);
}

std::unique_ptr<PreparedCase> prepare_case(const Matrix& mx, const CasePlan& cp, Way way, const Environment& env,
                                           const MeasureOptions& measure, Progress& progress) {
  auto d = std::make_unique<PreparedCase>();
  d->c = cp.c;
  d->base_.problem_case = cp.c;
  d->validate_queries_ = cp.validate_queries;
  if (!cp.c.missing_data.empty()) d->skip = cp.c.missing_data;  // a data file to fetch first: skipped with the command
  else if (way == Way::sharded) d->prepare_shard(mx, env.host_memory, measure.validate, progress);
  else if (way == Way::in_process) d->prepare_here(mx, env.host_memory, measure.validate, progress);
  return d;  // isolated: each child prepares the case itself
}

}  // namespace knn
