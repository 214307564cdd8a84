// A GPU result's busy time under CUPTI's activity trace (gpu_busy.hpp).
#include "gpu_busy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#ifdef KNN_HAVE_CUPTI
#include <cupti.h>
#endif

namespace knn {

double covered_length(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, start = 0, end = 0;
  bool open = false;
  for (const auto& [s, e] : intervals) {
    if (!(e > s)) continue;
    if (open && s <= end) {
      end = std::max(end, e);
      continue;
    }
    if (open) total += end - start;
    start = s, end = e, open = true;
  }
  return open ? total + (end - start) : total;
}

double gpu_busy_share(const ResultGpuBusy& busy, double median_ms) {
  if (!busy.measured() || !(median_ms > 0)) return 0;
  return std::min(1.0, busy.busy_ms / median_ms);
}

bool host_bound(const ResultGpuBusy& busy, double median_ms) {
  return busy.measured() && median_ms > 0 && gpu_busy_share(busy, median_ms) < kGpuBoundShare;
}

#ifdef KNN_HAVE_CUPTI
namespace {

// The records CUPTI hands back, from whichever thread it delivers them on.
std::mutex g_mutex;
std::vector<std::pair<double, double>> g_intervals;  // ns

constexpr std::size_t kBufferBytes = std::size_t(4) << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<std::pair<double, double>> got;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        got.emplace_back(double(k->start), double(k->end));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        got.emplace_back(double(c->start), double(c->end));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const auto* c = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
        got.emplace_back(double(c->start), double(c->end));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* s = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        got.emplace_back(double(s->start), double(s->end));
        break;
      }
      default: break;
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_intervals.insert(g_intervals.end(), got.begin(), got.end());
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
                                         CUPTI_ACTIVITY_KIND_MEMSET};

std::string failed(const char* what, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return fmt::format("not traced: CUPTI's {} failed ({})", what, text ? text : "unknown error");
}

// Stops the trace and detaches CUPTI, whatever happened during the call.
void detach() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (const CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
  cuptiFinalize();
}

}  // namespace

ResultGpuBusy trace_gpu_busy(const std::function<void()>& call) {
  ResultGpuBusy out;
  out.decided = true;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_intervals.clear();
  }
  if (const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    out.note = failed("cuptiActivityRegisterCallbacks", r);
    return out;
  }
  for (const CUpti_ActivityKind kind : kKinds)
    if (const CUptiResult r = cuptiActivityEnable(kind); r != CUPTI_SUCCESS) {
      detach();
      out.note = failed("cuptiActivityEnable", r);
      return out;
    }
  std::uint64_t t0 = 0, t1 = 0;
  cuptiGetTimestamp(&t0);
  try {
    call();
  } catch (...) {
    detach();
    throw;
  }
  cuptiGetTimestamp(&t1);
  std::size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  detach();
  std::vector<std::pair<double, double>> inside;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const auto& [s, e] : g_intervals) inside.emplace_back(std::max(s, double(t0)), std::min(e, double(t1)));
    g_intervals.clear();
  }
  if (dropped > 0) {
    out.note = fmt::format("not traced: CUPTI dropped {} activity records", dropped);
    return out;
  }
  out.span_ms = double(t1 - t0) * 1e-6;
  out.busy_ms = covered_length(std::move(inside)) * 1e-6;
  if (!(out.span_ms > 0)) out.note = "not traced: the traced call took no measurable time";
  return out;
}

#else

ResultGpuBusy trace_gpu_busy(const std::function<void()>&) {
  ResultGpuBusy out;
  out.decided = true;
  out.note = "not traced: this build has no CUPTI (the CUDA Toolkit's profiling library)";
  return out;
}

#endif

}  // namespace knn
