#pragma once
// A case made ready for its versions, once, whichever way they run (plan.hpp): its inputs
// (generated or read; under mpirun this rank's shard of the references), their checksums, the
// data file's ground truth and the validation reference; or the one reason every version of the
// case skips (a data file to fetch, too little host memory).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/environment.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "data.hpp"
#include "host_memory.hpp"
#include "matrix.hpp"
#include "options.hpp"
#include "plan.hpp"
#include "result.hpp"
#include "validate.hpp"

namespace knn {

// What the steps of a case tell the reporters: a step that takes time before the versions run
// ("generating data", "validation reference"), and the start of a version. Under mpirun rank 0
// alone reports.
class Progress {
 public:
  virtual ~Progress() = default;
  virtual void step(const Case& c, const std::string& what) = 0;
  virtual void start(const Case& c, const std::string& label) = 0;  // label: PlanItem::label()
};

class PreparedCase {
 public:
  PreparedCase() = default;
  PreparedCase(const PreparedCase&) = delete;
  PreparedCase& operator=(const PreparedCase&) = delete;

  Case c;
  std::optional<std::string> skip;     // why every version of the case skips; nothing below is set then
  std::optional<std::string> failure;  // why every version of the case fails (under mpirun: a rank's data file); as skip
  Problem problem{};                // the inputs (the references: this rank's shard when sharded)
  double input_bytes = 0;           // the inputs and answers in bytes, for out-of-memory reasons

  // A result of `v` on this case before it runs: the case, the inputs' checksums and the version's names.
  Result result_for(const VersionDesc& v) const;
  // The same, with the item's parameters recorded.
  Result result_for(const PlanItem& item) const;
  // The validation reference, null when the run does not validate (and on ranks other than 0). In
  // this process it is computed at the first call (a step on `progress`), so a case whose versions
  // all skip never computes it; std::bad_alloc when it does not fit (a later call tries again).
  const Reference* reference(Progress& progress);

 private:
  friend std::unique_ptr<PreparedCase> prepare_case(const Matrix&, const CasePlan&, Way, const Environment&, const MeasureOptions&,
                                                    Progress&);
  // In this process: every input, checked and checksummed, and the ground truth when validating.
  void prepare_here(const Matrix& mx, HostMemory mode, bool validate, Progress& progress);
  void read_truth(const Matrix& mx);
  // Sharded (sharded_case.cpp): this rank's references; rank 0 streams them all for the checksum and reference.
  void prepare_shard(const Matrix& mx, HostMemory mode, bool validate, Progress& progress);
  // Rank 0's pass over every reference: the checksums, the validation reference and the ground
  // truth; a data file's rows are checked against each rank's checksum of its shard (`shard_sums`,
  // in rank order): the problem when a rank read them otherwise.
  std::optional<std::string> stream_references(const Matrix& mx, bool validate, int piece_rows, Progress& progress,
                                               const std::vector<std::uint64_t>& shard_sums);
  // Sets input_bytes (these inputs and their answers); the skip reason when that is over 90 % of
  // what the process can still allocate.
  std::optional<std::string> room_for(std::size_t query_floats, std::size_t reference_floats);
  // The inputs' storage, where the run keeps them; the skip reason when it cannot be had.
  std::optional<std::string> allocate(std::size_t query_floats, std::size_t reference_floats, HostMemory mode, const char* doing);

  Result base_;                             // the case's fields and checksums
  std::optional<HostArray> queries_, references_;
  int validate_queries_ = 0;
  bool reference_due_ = false;              // validated in this process and not computed yet
  std::optional<Reference> reference_;
  std::optional<Reference> truth_;          // the case's ground truth file, or its HDF5 queries file's "neighbors"
};

// Points [first, first + count) of one of a case's point sets: read from its data file when it
// names one (ConfigError naming the matrix, the case, the field and the file when that fails), else
// generated.
void fill_point_rows(const Matrix& mx, const Case& c, PointSet set, std::size_t first, std::size_t count, float* out);
// "MATRIX: case ID: references_file: " (or queries_file) before a data file's problem `what`.
std::string data_file_problem(const Matrix& mx, const Case& c, PointSet set, const std::string& what);

// Makes case `cp.c` ready for its versions run the way `way`: in this process every input is
// generated or read, checked (no overflowing distance) and checksummed, and the ground truth read;
// sharded, each rank generates or reads its shard and rank 0 streams every reference once for the
// checksum and the validation reference (a rank whose data file fails fails the case's versions); isolated, nothing (the child prepares it).
// ConfigError (exit 2) for a data or ground truth file that does not match its case.
std::unique_ptr<PreparedCase> prepare_case(const Matrix& mx, const CasePlan& cp, Way way, const Environment& env,
                                           const MeasureOptions& measure, Progress& progress);

}  // namespace knn
