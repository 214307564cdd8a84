#include "executor.hpp"

#include <new>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "devices.hpp"
#include "interleave.hpp"
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
    const std::optional<std::string> no_room = fetch_reference(!why, progress, reference);
    progress.start(data_.c, item.label());
    if (no_room) {
      mark_skipped(r, *no_room);
      return r;
    }
    measure_unless_skipped(v, data_.problem, env, measure_, why, reference, r);
    if (v.gpus != GpuNeed::none) trim_device_pools(env_.devices);
    return r;
  }

  std::vector<Result> run_pair(const PlanItem& a, const PlanItem& b, Progress& progress) override {
    const VersionDesc& v = *a.version;
    const Environment env_a = with_params(env_, a), env_b = with_params(env_, b);
    Result ra = data_.result_for(a), rb = data_.result_for(b);
    const std::optional<std::string> why_a = why_skipped(v, data_.problem, env_a), why_b = why_skipped(v, data_.problem, env_b);
    const Reference* reference = nullptr;
    const std::optional<std::string> no_room = fetch_reference(!why_a || !why_b, progress, reference);
    progress.start(data_.c, a.label());
    progress.start(data_.c, fmt::format("{} interleaved with {}", b.label(), a.label()));
    if (no_room) {
      mark_skipped(ra, *no_room);
      mark_skipped(rb, *no_room);
    } else {
      measure_pair_unless_skipped(v, data_.problem, env_a, env_b, measure_, why_a, why_b, reference, ra, rb);
    }
    if (v.gpus != GpuNeed::none) trim_device_pools(env_.devices);
    return {std::move(ra), std::move(rb)};
  }

 private:
  // The case's validation reference when `needed`, computed for the first version that runs; the
  // skip reason when it does not fit in host memory.
  std::optional<std::string> fetch_reference(bool needed, Progress& progress, const Reference*& reference) {
    try {
      if (needed) reference = data_.reference(progress);
    } catch (const std::bad_alloc&) {
      return skip_reason::out_of_host_memory("computing the validation reference", data_.input_bytes, double(usable_host_memory()));
    }
    return std::nullopt;
  }

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
