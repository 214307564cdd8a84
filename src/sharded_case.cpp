#include "sharded_case.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <optional>

#include "data.hpp"
#include "host_memory.hpp"
#include "measure.hpp"
#include "mpi_env.hpp"
#include "runner.hpp"
#include "skip_reasons.hpp"
#include "validate.hpp"

namespace knn {

void run_sharded_versions(const Matrix& /*mx*/, const Case& c, const std::vector<const VersionDesc*>& versions,
                          const Environment& env, const MeasureOptions& measure, int validate_queries, const Result& base,
                          const std::function<void(const VersionDesc&)>& announce, const std::function<void(Result)>& finish) {
  if (versions.empty()) return;
  const MpiWorld& world = mpi_world();
  auto skip_all = [&](const std::string& reason) {
    if (world.root()) skip_versions(versions, base, reason, announce, finish);
  };
  if (!c.queries_path.empty() || !c.references_path.empty()) {
    skip_all(fmt::format("data files are read whole: reading one shard per rank is not built (run without mpirun, "
                         "or on generated data)"));
    return;
  }
  // Generated data needs no overflow check (value_range.cpp): coordinates are below 2^24 and the
  // sum of squares of any dim stays far from FLT_MAX.
  const Shard shard = shard_of(c.n, world.rank, world.size);
  const std::size_t dim = std::size_t(c.dim), query_floats = c.self_join ? 0 : std::size_t(c.m) * dim;
  const double need = 4.0 * double(std::size_t(shard.size) * dim + query_floats) + 16.0 * double(std::size_t(c.m) * c.topk);
  const double have = double(usable_host_memory());
  std::optional<std::string> why;
  if (have > 0 && need > 0.9 * have) why = skip_reason::host_memory(need, have);
  std::optional<HostArray> references, queries;
  if (!why) {
    try {
      references.emplace(std::size_t(shard.size) * dim, env.host_memory);
      queries.emplace(query_floats, env.host_memory);
    } catch (const std::bad_alloc&) {
      why = skip_reason::out_of_host_memory("allocating the shard", need, double(usable_host_memory()));
    }
  }
  if (auto first = mpi_first_reason(why)) {
    skip_all(*first);
    return;
  }
  generate_point_range(c.distribution, c.seed, PointSet::references, c.dim, std::size_t(shard.first), std::size_t(shard.size),
                       references->data(), c.integer_max);
  if (!c.self_join) generate_points(c.distribution, c.seed, PointSet::queries, c.dim, std::size_t(c.m), queries->data(), c.integer_max);
  Problem p{c.dim, c.m, c.n, c.topk, c.self_join ? references->data() : queries->data(), references->data(), c.self_join};
  p.shard_begin = shard.first;
  p.shard_n = shard.size;

  // Rank 0 streams every reference once, a piece no larger than its shard at a time: the checksum,
  // and the validation reference (v0's arithmetic) for the validated queries.
  Result with_data = base;
  std::optional<Reference> reference;
  if (world.root()) {
    Checksum sum;
    const auto piece = [&c](int first, int count, float* out) {
      generate_point_range(c.distribution, c.seed, PointSet::references, c.dim, std::size_t(first), std::size_t(count), out, c.integer_max);
    };
    const auto point = [c](std::int32_t index, float* out) {
      generate_point_range(c.distribution, c.seed, PointSet::references, c.dim, std::size_t(index), 1, out, c.integer_max);
    };
    Problem whole = p;  // the shape of the whole problem; its references are never read
    whole.references = nullptr;
    if (c.self_join) whole.queries = nullptr;
    // No validated query: the pass still runs for the checksum.
    reference = compute_reference_chunked(whole, measure.validate ? validate_queries : 1, std::max(1, shard.size), piece,
                                          [&sum](const float* rows, std::size_t floats) { sum.add(rows, floats * sizeof(float)); },
                                          point);
    if (!measure.validate) reference.reset();
    with_data.reference_checksum = to_hex(sum.value());
    with_data.query_checksum = c.self_join ? with_data.reference_checksum : to_hex(checksum(queries->data(), query_floats));
  }
  MeasureOptions quiet = measure;  // ranks other than 0 neither validate nor write answers
  quiet.validate = false;
  quiet.dump_answers.clear();
  for (const VersionDesc* v : versions) {
    Result r = with_data;
    if (world.root()) announce(*v);
    measure_version(*v, p, env, world.root() ? measure : quiet, reference ? &*reference : nullptr, r);
    if (world.root()) finish(std::move(r));
  }
}

}  // namespace knn
