#include "interleave.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>

#include "canary.hpp"
#include "clocks.hpp"
#include "core/errors.hpp"
#include "interrupt.hpp"
#include "measure_calls.hpp"
#include "mpi_env.hpp"

namespace knn {
namespace {

// Each version's items in a case, in order.
std::map<const VersionDesc*, std::vector<const PlanItem*>> by_version(const std::vector<const PlanItem*>& items) {
  std::map<const VersionDesc*, std::vector<const PlanItem*>> out;
  for (const PlanItem* item : items) out[item->version].push_back(item);
  return out;
}

// One setting's side of the interleaved loop.
struct Setting {
  Setting(const VersionDesc& desc, const Problem& p, const Environment& env, Result& result)
      : calls(desc, p, env, result, /*lockstep=*/false), r(result) {}
  VersionCalls calls;
  Result& r;
  MeasureRecord rec;
  double fastest = std::numeric_limits<double>::infinity();
  double warm_ms = 0, total_ms = 0, last_ms = 0;
  bool settled = false;
};

struct PairAnswers {
  std::array<std::optional<Answer>, 2> answers;
};

// The loop of interleave.hpp. A call that throws ends it: that setting is recorded as the exception
// makes it, and the other is measured again alone.
PairAnswers measure_interleaved(const VersionDesc& desc, const Problem& p, const std::array<const Environment*, 2>& envs,
                                const MeasureOptions& opts, const std::array<Result*, 2>& results) {
  reset_calls_made();
  Setting a(desc, p, *envs[0], *results[0]), b(desc, p, *envs[1], *results[1]);
  const std::array<Setting*, 2> s{&a, &b};
  int current = 0;  // the setting whose call is in flight
  const auto call = [&](int x, bool keep, int batch) {
    current = x;
    return s[std::size_t(x)]->calls.call(keep, batch);
  };
  const std::vector<DeviceInfo> gpus = devices_of(desc, *envs[0]);
  bool one_sample = false;
  try {
    const double max_ms = opts.max_time_s * 1e3;
    // Warm-up, A B each time, sharing each setting's --max-time budget as measure() does.
    for (int w = 0; w < opts.warmup && !one_sample && !stop_requested() && std::max(a.warm_ms, b.warm_ms) <= max_ms; ++w)
      for (int x = 0; x < 2 && !one_sample; ++x) {
        Setting& t = *s[std::size_t(x)];
        const double ms = call(x, false, 1);
        t.warm_ms += ms;
        one_sample = ms > max_ms;
        t.fastest = std::min(t.fastest, ms);
        t.rec.calls_per_sample = calls_per_sample(t.fastest);
      }
    for (Setting* t : s)
      for (const DeviceInfo& d : gpus) t->rec.clocks.push_back(ClockRecord{d.ordinal, read_clock(d), {}});
    if (one_sample) {  // a call over the whole budget: one timed call of each, next to each other
      for (int x = 0; x < 2; ++x) {
        clear_samples(s[std::size_t(x)]->r);
        call(x, true, 1);
        s[std::size_t(x)]->r.note = fmt::format("one sample: a call takes longer than --max-time {} s", opts.max_time_s);
      }
    } else {
      // Sample pair k: A then B when k is even, B then A when odd (A B B A A B ...), each with its own
      // batch size. A batch size still settling drops the samples of both, so sample i of A and sample
      // i of B always ran next to each other.
      for (int k = 0;; ++k) {
        if (stop_requested()) {
          a.rec.interrupted = b.rec.interrupted = true;
          break;
        }
        for (int i = 0; i < 2; ++i) {
          const int x = i ^ (k & 1);
          s[std::size_t(x)]->last_ms = call(x, true, s[std::size_t(x)]->rec.calls_per_sample);
        }
        bool resized = false;
        for (Setting* t : s)
          if (!t->settled) resized = !(t->settled = batch_settled(t->last_ms, t->rec)) || resized;
        if (resized) {
          for (Setting* t : s) clear_samples(t->r), t->total_ms = 0;
          continue;
        }
        for (Setting* t : s) t->total_ms += t->last_ms;
        const std::size_t n = a.r.samples_ms.size();
        const bool met = targets_met(a.r.samples_ms, a.total_ms, opts) && targets_met(b.r.samples_ms, b.total_ms, opts);
        if (met || limit_reached(n, a.total_ms, a.last_ms, opts) || limit_reached(n, b.total_ms, b.last_ms, opts)) break;
      }
      for (Setting* t : s)
        if (int(t->r.samples_ms.size()) < opts.min_samples && !t->rec.interrupted)
          add_note(t->r, fmt::format("{} samples: --max-time {} s reached", t->r.samples_ms.size(), opts.max_time_s));
    }
    for (Setting* t : s)
      for (std::size_t i = 0; i < gpus.size(); ++i) t->rec.clocks[i].after = read_clock(gpus[i]);
    for (int x = 0; x < 2; ++x)
      if (!s[std::size_t(x)]->rec.interrupted) {
        current = x;
        probe_gpu_busy(s[std::size_t(x)]->calls, !gpus.empty(), opts, /*lockstep=*/false, s[std::size_t(x)]->r);
      }
  } catch (...) {
    const int y = 1 - current;  // the other setting, measured again on its own
    Result& failed = s[std::size_t(current)]->r;
    Result& other = s[std::size_t(y)]->r;
    record_exception(failed, p);
    clear_samples(other);
    other.note.clear();
    PairAnswers out;
    out.answers[std::size_t(y)] = measure(desc, p, *envs[std::size_t(y)], opts, other);
    add_note(other, fmt::format("measured alone: {} {} when the two were interleaved", failed.label(), to_string(failed.status)));
    return out;
  }
  PairAnswers out;
  for (int x = 0; x < 2; ++x) {
    Setting& t = *s[std::size_t(x)];
    add_note(t.r, "interleaved with " + s[std::size_t(1 - x)]->r.label());
    if (!finish_measurement(t.rec, opts, one_sample, t.r)) continue;  // interrupted: a skip, no samples
    t.r.interleaved = true;
    out.answers[std::size_t(x)] = std::move(t.calls.answer());
  }
  return out;
}

}  // namespace

void refuse_what_interleave_cannot_do(const RunOptions& opts, const Plan& plan) {
  if (opts.isolate)
    throw ConfigError("--interleave with --isolate: --isolate runs each setting in a process of its own, and the two settings "
                      "interleaved share one sampling loop; give one or the other");
  if (opts.measure.resample > 0)
    throw ConfigError(fmt::format("--interleave with --resample {}: a setting sampled again would leave its samples without "
                                  "neighbours of the other setting; give one or the other",
                                  opts.measure.resample));
  if (mpi_world().many())
    throw ConfigError(fmt::format("--interleave under mpirun ({} ranks): the ranks of a sharding version make their calls in "
                                  "lockstep, one setting at a time; run without mpirun to interleave",
                                  mpi_world().size));
  bool any_pair = false;
  for (const CasePlan& cp : plan.cases)
    for (const auto& [version, items] : by_version(cp.items_of(Way::in_process))) {
      if (items.size() == 2) any_pair = true;
      if (items.size() <= 2) continue;
      std::string labels;
      for (const PlanItem* item : items) labels += (labels.empty() ? "" : ", ") + item->label();
      throw ConfigError(fmt::format("--interleave: case {} runs {} in {} settings ({}); --interleave takes a sweep of one parameter "
                                    "over two values (--param {}.NAME=X,Y)",
                                    cp.c.id, version->id, items.size(), labels, version->id));
    }
  if (!any_pair)
    throw ConfigError("--interleave: no version runs in two settings, so there is nothing to interleave; sweep one parameter "
                      "over two values (--param V.NAME=X,Y)");
}

std::vector<std::vector<const PlanItem*>> interleave_groups(const std::vector<const PlanItem*>& items) {
  const auto versions = by_version(items);
  std::vector<std::vector<const PlanItem*>> out;
  for (const PlanItem* item : items) {
    const std::vector<const PlanItem*>& same = versions.at(item->version);
    if (same.size() != 2) out.push_back({item});
    else if (same.front() == item) out.push_back(same);  // the pair, where its first setting stood
  }
  return out;
}

void measure_pair_unless_skipped(const VersionDesc& desc, const Problem& p, const Environment& env_a, const Environment& env_b,
                                 const MeasureOptions& opts, const std::optional<std::string>& why_a,
                                 const std::optional<std::string>& why_b, const Reference* reference, Result& ra, Result& rb) {
  if (why_a || why_b) {  // nothing to interleave with: each on its own
    measure_unless_skipped(desc, p, env_a, opts, why_a, reference, ra);
    measure_unless_skipped(desc, p, env_b, opts, why_b, reference, rb);
    return;
  }
  ra.host_memory = env_a.host_memory;
  rb.host_memory = env_b.host_memory;
  CanaryProbe canary = input_canary(opts, env_a, p);  // one canary around both: they ran over the same time
  PairAnswers got = measure_interleaved(desc, p, {&env_a, &env_b}, opts, {&ra, &rb});
  if (got.answers[0]) grade_answer(ra, *got.answers[0], p, reference, opts);
  if (got.answers[1]) grade_answer(rb, *got.answers[1], p, reference, opts);
  canary.finish(ra.canary, ra.host_facts);
  rb.canary = ra.canary;
  rb.host_facts = ra.host_facts;
}

}  // namespace knn
