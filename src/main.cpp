#include <fmt/format.h>

#include <exception>

#include "cli.hpp"
#include "core/errors.hpp"
#include "omp_env.hpp"

int main(int argc, char** argv) {
  knn::set_omp_defaults(argv);  // first: the OpenMP runtime must see them when it starts
  knn::keep_freed_host_memory();
  try {
    return knn::cli_main(argc, argv);
  } catch (const knn::ConfigError& e) {
    fmt::print(stderr, "knnbench: {}\n", e.what());
    return knn::kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "knnbench: internal error: {}\n", e.what());
    return knn::kExitInternal;
  }
}
