#pragma once
// knnbench under mpirun: the harness's one room that knows MPI. Every rank runs the same matrix in
// lockstep; rank 0 alone prints and writes results. Built without MPI, or started without mpirun,
// the process is rank 0 of 1 and every function here is a no-op.
#include <optional>
#include <string>
#include <vector>

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
