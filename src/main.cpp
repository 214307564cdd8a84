#include <fmt/format.h>

#include <exception>
#include <string>

#include "cli.hpp"
#include "core/errors.hpp"
#include "mpi_env.hpp"
#include "omp_env.hpp"

int main(int argc, char** argv) {
  knn::set_omp_defaults(argv);  // first: the OpenMP runtime must see them when it starts
  knn::keep_freed_host_memory();
  if (const auto bad = knn::mpi_timeout_problem()) {  // before MPI starts: each rank leaves alone, no MPI_Abort
    fmt::print(stderr, "knnbench: {}\n", *bad);
    return knn::kExitUsage;
  }
  const knn::MpiSession mpi(&argc, &argv);  // under mpirun only
  const std::string who = knn::mpi_world().many() ? fmt::format("knnbench (rank {})", knn::mpi_world().rank) : "knnbench";
  try {
    return knn::mpi_exit_code(knn::cli_main(argc, argv));  // under mpirun: a signal on any rank is every rank's exit code
  } catch (const knn::ConfigError& e) {
    fmt::print(stderr, "{}: {}\n", who, e.what());
    knn::mpi_abort_all(knn::kExitUsage);  // other ranks may wait in a collective call
    return knn::kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: internal error: {}\n", who, e.what());
    knn::mpi_abort_all(knn::kExitInternal);
    return knn::kExitInternal;
  }
}
