#pragma once
// Command-line entry: parses flags with CLI11 and dispatches to the runner (or --list).
namespace CLI {
class App;
}

namespace knn {

struct RunOptions;

// Returns the process exit code: 0 ok, 1 a validation failure, 2 a usage or configuration error.
int cli_main(int argc, char** argv);

// The flags of a run, bound to `o` (which must outlive the parse). Every flag that shapes a run
// belongs here, so that the options round trip of --isolate children covers it.
void add_run_options(CLI::App& app, RunOptions& o);

}  // namespace knn
