#pragma once
// --isolate: each (case, version) runs in a child knnbench process, so that a fault (an illegal
// address leaves the CUDA context broken for the whole process), a crash or a hang cannot take
// the run down. The parent writes the run's options once, as JSON (options.hpp), narrowed to the
// one case and version; the child (`knnbench --isolated-child FILE`) reads them back, runs, and
// writes a one-result JSON file that the parent reads, or the parent records the child's signal,
// exit code or time-out as a failure.
#include <string>

#include "core/registry.hpp"
#include "matrix.hpp"
#include "options.hpp"
#include "plan.hpp"
#include "result.hpp"

namespace knn {

// Parent side. `c` carries the seed the run uses. Never throws for what the child does; throws
// std::runtime_error when no child can be started.
Result run_isolated(const RunOptions& opts, const Case& c, const PlanItem& item);

// The options a child receives: `opts` narrowed to case `case_id` and version `version_id`,
// writing its one result to `json_path`.
RunOptions child_options(const RunOptions& opts, int case_id, const PlanItem& item, const std::string& json_path);

// Removes what killed --isolate runs left in the temporary folder: this user's
// "knnbench-<pid>-*" files whose parent process <pid> no longer exists. Returns how many.
int remove_stale_isolate_files();

// Child side: the options the parent wrote. ConfigError (exit 2) naming the file when it cannot
// be read.
RunOptions read_child_options(const std::string& path);

}  // namespace knn
