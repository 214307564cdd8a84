#include <fmt/format.h>

#include <exception>

#include "cli.hpp"
#include "core/errors.hpp"

int main(int argc, char** argv) {
  try {
    return knn::cli_main(argc, argv);
  } catch (const knn::ConfigError& e) {
    fmt::print(stderr, "knnbench: {}\n", e.what());
    return knn::kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "knnbench: internal error: {}\n", e.what());
    return 3;
  }
}
