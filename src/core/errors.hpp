#pragma once
#include <stdexcept>
#include <string>

namespace knn {

// A bad flag, file or matrix: the process exits with code 2 and this message.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A resource (device or host memory) is too small for a case: the harness records a skip with
// this message and goes on.
class OutOfMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Exit codes of the whole program (a run, compare, report), for the CLI and its tests: 0 success,
// 1 a validation failure (compare: at least one SLOWER verdict), 2 a usage or configuration error
// (compare: nothing compared), 3 an internal error. Signals: 128 + the signal (SIGINT 130, SIGTERM 143).
enum ExitCode : int { kExitOk = 0, kExitValidationFailed = 1, kExitUsage = 2, kExitInternal = 3 };

}  // namespace knn
