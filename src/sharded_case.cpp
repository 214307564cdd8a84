#include "sharded_case.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "core/errors.hpp"
#include "data.hpp"
#include "datafile.hpp"
#include "measure.hpp"
#include "mpi_env.hpp"
#include "skip_reasons.hpp"
#include "sysinfo.hpp"
#include "validate.hpp"
#include "value_range.hpp"

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

namespace {

// A problem found where rank 0 keeps the streamed references (not in the data): a skip, as too
// little host memory is.
struct SpillError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The references of a data file that rank 0 streamed, kept in an unlinked file of $TMPDIR (else
// /tmp) and mapped read-only once written, for the validation reference and validation's single
// points: rank 0 never holds them all in its own memory, and a data file that cannot be read at a
// row (CSV, gzipped IDX) is read once.
class SpilledRows {
 public:
  explicit SpilledRows(int dim) : dim_(std::size_t(dim)) {
    const char* tmp = std::getenv("TMPDIR");
    dir_ = tmp && *tmp ? tmp : "/tmp";
    std::string name = dir_ + "/knnbench-references-XXXXXX";
    fd_ = ::mkstemp(name.data());
    if (fd_ < 0) fail(errno);
    ::unlink(name.c_str());
  }
  ~SpilledRows() {
    if (data_) ::munmap(const_cast<float*>(data_), bytes_);
    if (fd_ >= 0) ::close(fd_);
  }
  SpilledRows(const SpilledRows&) = delete;
  SpilledRows& operator=(const SpilledRows&) = delete;

  void add(const float* rows, std::size_t floats) {
    const char* p = reinterpret_cast<const char*>(rows);
    for (std::size_t left = floats * sizeof(float); left > 0;) {
      const ssize_t w = ::write(fd_, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail(w < 0 ? errno : ENOSPC);
      p += w, left -= std::size_t(w), bytes_ += std::size_t(w);
    }
  }
  void map() {
    if (bytes_ == 0) return;
    void* m = ::mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd_, 0);
    if (m == MAP_FAILED) fail(errno);
    data_ = static_cast<const float*>(m);
  }
  void rows(std::size_t first, std::size_t count, float* out) const { std::copy_n(data_ + first * dim_, count * dim_, out); }

 private:
  [[noreturn]] void fail(int err) const {
    throw SpillError(fmt::format("rank 0 keeps the references it streams for validation in a temporary file in {}, which failed ({}): "
                                 "set TMPDIR to a folder with room for them, or run without validation", dir_, std::strerror(err)));
  }
  std::size_t dim_;
  std::string dir_;
  int fd_ = -1;
  std::size_t bytes_ = 0;
  const float* data_ = nullptr;
};

// The traits of the queries and of the references together, as examine_values finds them over both.
ValueTraits both(ValueTraits a, const ValueTraits& b) {
  a.finite = a.finite && b.finite;
  a.whole = a.finite && a.whole && b.whole;
  a.lowest = a.finite ? std::min(a.lowest, b.lowest) : 0.f;
  a.highest = a.finite ? std::max(a.highest, b.highest) : 0.f;
  return a;
}
[[noreturn]] void refuse_as(const std::string& what) { throw ConfigError(what); }
double largest(const ValueTraits& t) { return std::max(std::abs(double(t.lowest)), std::abs(double(t.highest))); }

}  // namespace

void PreparedCase::prepare_shard(const Matrix& mx, HostMemory mode, bool validate, Progress& progress) {
  const MpiWorld& world = mpi_world();
  const Shard shard = shard_of(c.n, world.rank, world.size);
  const bool files = !c.queries_path.empty() || !c.references_path.empty();
  const std::size_t qf = c.self_join ? 0 : std::size_t(c.m) * c.dim, rf = std::size_t(shard.size) * c.dim;
  std::optional<std::string> why = room_for(qf, rf);
  if (!why) why = allocate(qf, rf, mode, "allocating the shard");
  if ((skip = mpi_first_reason(why))) return;  // one rank's reason skips every rank
  // Every rank its rows of the references, and the queries whole (in a self-join its rows are its queries).
  progress.step(c, files ? "reading data (each rank its rows)" : "generating data (each rank its rows)");
  std::optional<std::string> bad;
  try {
    if (!c.self_join) fill_point_rows(mx, c, PointSet::queries, 0, std::size_t(c.m), queries_->data());
    fill_point_rows(mx, c, PointSet::references, std::size_t(shard.first), std::size_t(shard.size), references_->data());
  } catch (const ConfigError& e) {
    bad = e.what();
  }
  if ((failure = mpi_first_reason(bad))) return;  // "rank R: MATRIX: case ID: references_file: FILE: ..." fails every rank's versions
  problem = Problem{c.dim, c.m, c.n, c.topk, c.self_join ? references_->data() : queries_->data(), references_->data(), c.self_join};
  problem.shard_begin = shard.first;
  problem.shard_n = shard.size;
  // The values' traits over every rank's rows, as one process finds them over all the data.
  const ValueTraits refs = mpi_combined_values(examine_values(nullptr, 0, references_->data(), rf), rf == 0);
  const ValueTraits queries = c.self_join ? refs : examine_values(queries_->data(), qf, nullptr, 0);
  problem.values = both(queries, refs);
  // Generated data needs no overflow check (value_range.cpp): coordinates are below 2^24 and the
  // sum of squares of any dim stays far from FLT_MAX. A file's is decided alike on every rank.
  try {
    if (files) refuse_overflowing_magnitudes(mx.file, c, largest(queries), largest(refs));
  } catch (const ConfigError& e) {
    failure = e.what();
    return;
  }
  // What each rank read, for rank 0 to compare with its own reading: ranks that see different files
  // at one path (another host's copy) fail the case rather than search data rank 0 never saw.
  std::vector<std::uint64_t> shard_sums, query_sums;
  if (files) shard_sums = mpi_gather_u64(checksum(references_->data(), rf));
  if (!c.queries_path.empty()) query_sums = mpi_gather_u64(checksum(queries_->data(), qf));
  std::optional<std::string> no_room, broken;
  for (std::size_t r = 1; r < query_sums.size() && !broken; ++r)
    if (query_sums[r] != query_sums[0])
      broken = data_file_problem(mx, c, PointSet::queries, fmt::format("{}: rank {} read it as checksum {}, rank 0 as {}: the ranks see different files at this path",
                                                                      c.queries_path, r, to_hex(query_sums[r]), to_hex(query_sums[0])));
  if (world.root() && !broken) {
    try {
      broken = stream_references(mx, validate, std::max(1, shard.size), progress, shard_sums);
    } catch (const SpillError& e) {
      no_room = e.what();
    } catch (const std::bad_alloc&) {
      no_room = skip_reason::out_of_host_memory("computing the validation reference", input_bytes, double(usable_host_memory()));
    }
  }
  if ((skip = mpi_first_reason(no_room))) return;
  failure = mpi_first_reason(broken);
}

std::optional<std::string> PreparedCase::stream_references(const Matrix& mx, bool validate, int piece_rows, Progress& progress,
                                                           const std::vector<std::uint64_t>& shard_sums) {
  // Rank 0 streams every reference once, a piece no larger than its shard at a time: the checksum,
  // and the validation reference (v0's arithmetic) for the validated queries.
  Checksum sum;
  Problem whole = problem;  // the shape of the whole problem; its references are never read
  whole.references = nullptr;
  if (c.self_join) whole.queries = nullptr;
  const auto seen = [&sum](const float* points, std::size_t floats) { sum.add(points, floats * sizeof(float)); };
  if (c.references_path.empty()) {
    const auto rows = [c = c](int first, int count, float* out) {
      generate_point_range(c.distribution, c.seed, PointSet::references, c.dim, std::size_t(first), std::size_t(count), out, c.integer_max);
    };
    // No validated query: the pass still runs for the checksum.
    reference_ = compute_reference_chunked(whole, validate ? validate_queries_ : 1, piece_rows, rows, seen,
                                           [rows](std::int32_t index, float* out) { rows(index, 1, out); });
  } else {
    // A file is read once, in order (a CSV or a gzipped IDX file has no way to a row but from the
    // start): into the checksum and, when validating, a temporary file the reference then reads.
    const std::shared_ptr<SpilledRows> spill = validate ? std::make_shared<SpilledRows>(c.dim) : nullptr;
    try {
      const DataFileInfo info = inspect_data_file(c.references_path, std::uint64_t(c.dim));
      expect_shape(info, std::uint64_t(c.n), "n", std::uint64_t(c.dim));
      DataFileRows file(info);
      std::vector<float> piece(std::size_t(piece_rows) * c.dim);
      std::vector<Checksum> shards(shard_sums.size());  // rank r's rows, as rank 0 reads them
      const int ranks = int(shards.size());
      for (int first = 0; first < c.n; first += piece_rows) {
        const int count = std::min(piece_rows, c.n - first);
        file.read(std::uint64_t(first), std::uint64_t(count), piece.data());
        seen(piece.data(), std::size_t(count) * c.dim);
        if (spill) spill->add(piece.data(), std::size_t(count) * c.dim);
        for (int r = 0; r < ranks; ++r) {
          const Shard s = shard_of(c.n, r, ranks);
          const int from = std::max(first, s.first), to = std::min(first + count, s.first + s.size);
          if (from < to) shards[std::size_t(r)].add(piece.data() + std::size_t(from - first) * c.dim, std::size_t(to - from) * c.dim * sizeof(float));
        }
      }
      file.finish();
      for (int r = 1; r < ranks; ++r) {
        const Shard s = shard_of(c.n, r, ranks);
        if (shards[std::size_t(r)].value() != shard_sums[std::size_t(r)])
          refuse_as(fmt::format("{}: rank {} read its rows [{}, {}) as checksum {}, rank 0 reads them as {}: the ranks see different files at this path",
                                c.references_path, r, s.first, s.first + s.size, to_hex(shard_sums[std::size_t(r)]), to_hex(shards[std::size_t(r)].value())));
      }
    } catch (const ConfigError& e) {
      return data_file_problem(mx, c, PointSet::references, e.what());
    }
    if (spill) {
      spill->map();
      progress.step(c, "validation reference (v0 on every core)");
      reference_ = compute_reference_chunked(
          whole, validate_queries_, piece_rows, [spill](int first, int count, float* out) { spill->rows(std::size_t(first), std::size_t(count), out); },
          nullptr, [spill](std::int32_t index, float* out) { spill->rows(std::size_t(index), 1, out); });
    }
  }
  if (!validate) reference_.reset();
  base_.reference_checksum = to_hex(sum.value());
  base_.query_checksum = c.self_join ? base_.reference_checksum : to_hex(checksum(queries_->data(), std::size_t(c.m) * c.dim));
  if (!validate) return std::nullopt;
  try {
    read_truth(mx);  // the ground truth file, as in one process
  } catch (const ConfigError& e) {
    return e.what();
  }
  if (truth_) {
    // The ground truth is checked like the reference: its points come from rank 0's stream, not
    // from the shard in memory (which holds only rank 0's rows: reading index i there went past it).
    truth_->reference_point = reference_->reference_point;
    reference_->also = &*truth_;
  }
  return std::nullopt;
}

std::unique_ptr<Executor> make_sharded_executor(PreparedCase& data, const MeasureOptions& measure, const Environment& env) {
  return std::make_unique<Sharded>(data, measure, env);
}

}  // namespace knn
