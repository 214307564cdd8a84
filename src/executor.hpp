#pragma once
// The three ways a (case, version) runs, behind one interface: in this process, in an --isolate
// child process, or sharded over the ranks of mpirun (plan.hpp's Way). Each takes its case as
// prepare_case made it and returns the version's Result, skips and failures included; the runner
// hands it to the reporters. Measuring is measure.hpp's, the verdict grade.hpp's.
#include <memory>
#include <vector>

#include "core/environment.hpp"
#include "core/registry.hpp"
#include "options.hpp"
#include "plan.hpp"
#include "prepare.hpp"
#include "result.hpp"

namespace knn {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs the item's version with its parameters on the case: calls progress.start(case, label)
  // once, before the version's own work (after a step of the case it needs first, such as the
  // validation reference), and returns its result.
  virtual Result run(const PlanItem& item, Progress& progress) = 0;
  // --interleave: the two settings of one version (interleave.hpp) in one sampling loop, calling
  // progress.start for each; their results in the items' order. In this process only; the other ways
  // (refused with --interleave) and a case whose versions all skip run the two in turn.
  virtual std::vector<Result> run_pair(const PlanItem& a, const PlanItem& b, Progress& progress) { return {run(a, progress), run(b, progress)}; }
  // Whether the runner ends the case between two versions on an interrupt (SIGINT, SIGTERM).
  // Sharded ranks stop together inside the measurement instead; skips have nothing to stop.
  virtual bool stops_between_versions() const { return true; }
};

// The executor of `way` for `data` (kept by reference), or, when data.skip (data.failure) is set, one that reports
// every version skipped (failed) with that reason. The version sees `env` with the item's parameters
// (with_params). `opts` is the run's (an --isolate child receives them),
// `measure` the measurement options and `env` the devices and ranks of this process.
// `env` with the values of the item's parameters: what the item's version sees.
Environment with_params(const Environment& env, const PlanItem& item);

std::unique_ptr<Executor> make_executor(Way way, PreparedCase& data, const RunOptions& opts, const MeasureOptions& measure,
                                        const Environment& env);

}  // namespace knn
