#include "sharded_case.hpp"

#include <algorithm>

#include "data.hpp"
#include "measure.hpp"
#include "mpi_env.hpp"
#include "validate.hpp"

namespace knn {
namespace {

// Every version on every rank in lockstep, each rank with its shard.
class Sharded final : public Executor {
 public:
  Sharded(PreparedCase& data, const MeasureOptions& measure, const Environment& env) : data_(data), measure_(measure), env_(env) {
    quiet_.validate = false;
    quiet_.dump_answers.clear();
  }
  Result run(const PlanItem& item, Progress& progress) override {
    Result r = data_.result_for(item);
    progress.start(data_.c, item.label());
    measure_version(*item.version, data_.problem, with_params(env_, item), mpi_world().root() ? measure_ : quiet_, data_.reference(progress), r);
    return r;
  }
  bool stops_between_versions() const override { return false; }

 private:
  PreparedCase& data_;
  const MeasureOptions& measure_;
  MeasureOptions quiet_ = measure_;  // ranks other than 0 neither validate nor write answers
  const Environment& env_;
};

}  // namespace

void PreparedCase::prepare_shard(HostMemory mode, bool validate) {
  if (!c.queries_path.empty() || !c.references_path.empty()) {
    skip = "data files are read whole: reading one shard per rank is not built (run without mpirun, or on generated data)";
    return;
  }
  // Generated data needs no overflow check (value_range.cpp): coordinates are below 2^24 and the
  // sum of squares of any dim stays far from FLT_MAX.
  const MpiWorld& world = mpi_world();
  const Shard shard = shard_of(c.n, world.rank, world.size);
  const std::size_t qf = c.self_join ? 0 : std::size_t(c.m) * c.dim, rf = std::size_t(shard.size) * c.dim;
  std::optional<std::string> why = room_for(qf, rf);
  if (!why) why = allocate(qf, rf, mode, "allocating the shard");
  if ((skip = mpi_first_reason(why))) return;  // one rank's reason skips every rank
  const auto rows = [c = c](PointSet set, std::size_t first, std::size_t count, float* out) {
    generate_point_range(c.distribution, c.seed, set, c.dim, first, count, out, c.integer_max);
  };
  rows(PointSet::references, std::size_t(shard.first), std::size_t(shard.size), references_->data());
  if (!c.self_join) rows(PointSet::queries, 0, std::size_t(c.m), queries_->data());
  problem = Problem{c.dim, c.m, c.n, c.topk, c.self_join ? references_->data() : queries_->data(), references_->data(), c.self_join};
  problem.shard_begin = shard.first;
  problem.shard_n = shard.size;
  if (!world.root()) return;

  // Rank 0 streams every reference once, a piece no larger than its shard at a time: the checksum,
  // and the validation reference (v0's arithmetic) for the validated queries.
  Checksum sum;
  Problem whole = problem;  // the shape of the whole problem; its references are never read
  whole.references = nullptr;
  if (c.self_join) whole.queries = nullptr;
  // No validated query: the pass still runs for the checksum.
  reference_ = compute_reference_chunked(
      whole, validate ? validate_queries_ : 1, std::max(1, shard.size),
      [rows](int first, int count, float* out) { rows(PointSet::references, std::size_t(first), std::size_t(count), out); },
      [&sum](const float* points, std::size_t floats) { sum.add(points, floats * sizeof(float)); },
      [rows](std::int32_t index, float* out) { rows(PointSet::references, std::size_t(index), 1, out); });
  if (!validate) reference_.reset();
  base_.reference_checksum = to_hex(sum.value());
  base_.query_checksum = c.self_join ? base_.reference_checksum : to_hex(checksum(queries_->data(), qf));
}

std::unique_ptr<Executor> make_sharded_executor(PreparedCase& data, const MeasureOptions& measure, const Environment& env) {
  return std::make_unique<Sharded>(data, measure, env);
}

}  // namespace knn
