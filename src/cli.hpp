#pragma once
// Command-line entry: parses flags with CLI11 and dispatches to the runner (or --list).
namespace knn {
// Returns the process exit code: 0 ok, 1 a validation failure, 2 a usage or configuration error.
int cli_main(int argc, char** argv);
}  // namespace knn
