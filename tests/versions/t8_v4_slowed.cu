// Test-only version, linked into knnbench-testbin and never into knnbench: v4 slowed on purpose by
// more of the same work, for checking that a comparison calls a known slowdown SLOWER. It is v4
// (kernels/argmin/fused_soa.cuh) that uploads the first KNN_SLOWDOWN_PCT percent of the references a
// second time (the same bytes to the same place) and, after v4's scan, scans them a second time and
// merges the result, which never changes the answer (the same references, the same arithmetic, a
// subset of each thread's share). KNN_SLOWDOWN_PCT is a whole number from 0 to 100, default 0: then
// t8 calls v4 itself (its registered entry point), the same code and work. This file instantiates
// only the rescanning kernel, so v4's kernel has one definition in the binary, compiled with v4.
// The copy and the kernel, most of a call, both grow by that share (the transpose and the answer
// copy do not), so the whole call slows by a little less than the knob says. For example:
//   KNN_SLOWDOWN_PCT=10 knnbench-testbin --version v4,t8 --case 8-11
#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/registry.hpp"
#include "kernels/argmin/fused_soa.cuh"
#include "kernels/argmin/gpu_frame.hpp"

namespace {

constexpr const char* kKnob = "KNN_SLOWDOWN_PCT";

// The knob's value: 0 when unset or empty, else a whole number from 0 to 100.
int slowdown_percent() {
  const char* text = std::getenv(kKnob);
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > 100)
    throw std::invalid_argument(fmt::format("{}: expected a whole number from 0 to 100, got '{}'", kKnob, text));
  return int(value);
}

void t8_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  const int percent = slowdown_percent();
  // A multiple of 4 references: the rescan then reads whole quads, as v4's scan does.
  const int rescan_n = int(static_cast<long long>(p.n) * percent / 100 / 4 * 4);
  if (rescan_n == 0) {
    const knn::VersionDesc* v4 = knn::Registry::instance().find("v4");
    if (v4 == nullptr) throw std::logic_error("t8: v4 is not registered");
    v4->make()->query(p, out, ctx);
  } else {
    knn::gpu::run_fused_soa<true>(p, out, ctx, rescan_n);
  }
  ctx.path += fmt::format("; test only: uploads and rescans {} of {} references a second time ({}={})", rescan_n, p.n, kKnob, percent);
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("t8", "test only: v4 uploading and rescanning KNN_SLOWDOWN_PCT % of the references again",
                                   knn::Family::gpu, knn::GpuNeed::one, t8_query,
                                   [](const knn::Problem& p, const knn::Environment&) {
                                     return knn::gpu::fused_soa_device_bytes(p);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
