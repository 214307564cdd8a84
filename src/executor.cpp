#include "executor.hpp"

#include <new>
#include <optional>
#include <string>

#include "devices.hpp"
#include "isolate.hpp"
#include "measure.hpp"
#include "sharded_case.hpp"
#include "skip_reasons.hpp"
#include "sysinfo.hpp"

namespace knn {
namespace {

// Every version skipped for the case's reason (a data file to fetch, too little host memory), or
// failed for it (under mpirun, a rank's data file that could not be read).
class SkipAll final : public Executor {
 public:
  explicit SkipAll(const PreparedCase& data) : data_(data) {}
  Result run(const PlanItem& item, Progress& progress) override {
    progress.start(data_.c, item.label());
    Result r = data_.result_for(item);
    if (data_.skip) {
      mark_skipped(r, *data_.skip);
    } else {
      r.status = Status::fail;
      r.reason = *data_.failure;
    }
    return r;
  }
  bool stops_between_versions() const override { return false; }

 private:
  const PreparedCase& data_;
};

// In this process: the version's skip check, then the case's validation reference (computed for
// the first version that runs), the measurement and the grading.
class InProcess final : public Executor {
 public:
  InProcess(PreparedCase& data, const MeasureOptions& measure, const Environment& env) : data_(data), measure_(measure), env_(env) {}
  Result run(const PlanItem& item, Progress& progress) override {
    const VersionDesc& v = *item.version;
    const Environment env = with_params(env_, item);
    Result r = data_.result_for(item);
    const std::optional<std::string> why = why_skipped(v, data_.problem, env);
    const Reference* reference = nullptr;
    try {
      if (!why) reference = data_.reference(progress);
    } catch (const std::bad_alloc&) {
      progress.start(data_.c, item.label());
      mark_skipped(r, skip_reason::out_of_host_memory("computing the validation reference", data_.input_bytes, double(usable_host_memory())));
      return r;
    }
    progress.start(data_.c, item.label());
    measure_unless_skipped(v, data_.problem, env, measure_, why, reference, r);
    if (v.gpus != GpuNeed::none) trim_device_pools(env_.devices);
    return r;
  }

 private:
  PreparedCase& data_;
  const MeasureOptions& measure_;
  const Environment& env_;
};

// In a child knnbench process (isolate.hpp), which prepares the case itself.
class Isolated final : public Executor {
 public:
  Isolated(const PreparedCase& data, const RunOptions& opts) : data_(data), opts_(opts) {}
  Result run(const PlanItem& item, Progress& progress) override {
    progress.start(data_.c, item.label());
    return run_isolated(opts_, data_.c, item);
  }

 private:
  const PreparedCase& data_;
  const RunOptions& opts_;
};

}  // namespace

Environment with_params(const Environment& env, const PlanItem& item) {
  Environment e = env;
  e.params = item.params;
  return e;
}

std::unique_ptr<Executor> make_executor(Way way, PreparedCase& data, const RunOptions& opts, const MeasureOptions& measure,
                                        const Environment& env) {
  if (data.skip || data.failure) return std::make_unique<SkipAll>(data);
  switch (way) {
    case Way::isolated: return std::make_unique<Isolated>(data, opts);
    case Way::sharded: return make_sharded_executor(data, measure, env);
    case Way::in_process: break;
  }
  return std::make_unique<InProcess>(data, measure, env);
}

}  // namespace knn
