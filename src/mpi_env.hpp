#pragma once
// knnbench under mpirun: the harness's one room that knows MPI. Every rank runs the same matrix in
// lockstep; rank 0 alone prints and writes results. Built without MPI, or started without mpirun,
// the process is rank 0 of 1 and every function here is a no-op.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.hpp"

namespace knn {

struct MpiWorld {
  bool active = false;  // MPI was initialised (started by mpirun)
  int rank = 0, size = 1, local_rank = 0;
  bool root() const { return rank == 0; }
  bool many() const { return size > 1; }
};

// Initialises MPI when the process was started by mpirun (or another MPI launcher), never
// otherwise: a plain run stays a plain process. Finalises on destruction.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

const MpiWorld& mpi_world();
// Whether an MPI launcher (mpirun, srun, ...) started this process, from its environment. Its
// standard streams are then the launcher's: Open MPI hands each rank a pseudo-terminal even when
// mpirun's own output is a file, so isatty() says nothing about where the output ends up.
bool started_by_mpi_launcher();

// KNN_MPI_TIMEOUT_S (how long v18 waits for every rank's answer; unset or empty: 300 s): the
// problem with its value, naming the variable and the value, when it is not a number of seconds
// in (0, kMaxMpiTimeoutS] written as digits with an optional fraction; none when it is fine.
inline constexpr double kMaxMpiTimeoutS = 86400;
std::optional<std::string> mpi_timeout_problem();

// The exit code of this rank, `code` being what the run returned on it: when any rank received a
// signal (interrupt.hpp) every rank returns 128 + the signal of the lowest such rank, so that
// mpirun's exit code (the first non-zero one) is 130 or 143 whichever rank was stopped; rank 0
// says which rank stopped the run when it was not itself. Otherwise `code`. With one rank, `code`.
// Every rank must call it (a collective call).
int mpi_exit_code(int code);
// Whether this build has MPI at all.
bool mpi_built();

// Ends every rank at once (MPI_Abort) with `code` after an error on one: the other ranks may be
// waiting in a collective call and would otherwise wait forever. No-op with one rank.
void mpi_abort_all(int code);

// Lockstep primitives; with one rank they return their argument.
double mpi_root_value(double value);  // rank 0's value, on every rank
bool mpi_any(bool flag);              // true on every rank when it is true on one
// The first rank's reason (prefixed "rank R: ") when any rank has one; none when no rank has.
std::optional<std::string> mpi_first_reason(const std::optional<std::string>& mine);
// The traits of every rank's values together (core/problem.hpp): the lowest of the lowest, the
// highest of the highest, whole and finite only when they are on every rank. A rank that examined
// no value (`none`: an empty shard) counts for nothing; when every rank is empty, examine_values of
// nothing. With one rank, `mine`.
ValueTraits mpi_combined_values(const ValueTraits& mine, bool none);
// Each rank's `value`, gathered on rank 0 in rank order (empty on the other ranks); with one rank, {value}.
std::vector<std::uint64_t> mpi_gather_u64(std::uint64_t value);
// Waits until every rank arrives, sleeping between polls: a rank that waits while rank 0 measures
// a version alone takes no CPU time from it.
void mpi_wait_all();

// Each rank's host name and GPU, gathered on rank 0 (empty on the others), for the results file.
struct RankPlace {
  int rank = 0;
  std::string host, gpu;
};
std::vector<RankPlace> mpi_gather_places(const std::string& host, const std::string& gpu);

}  // namespace knn
