// Test-only version, linked into knnbench-testbin and never into knnbench: v4 slowed on purpose by
// more of the same work, for checking that a comparison calls a known slowdown SLOWER. It is v4
// (kernels/argmin/fused_soa.cuh) that uploads the first `slowdown` percent of the references a
// second time (the same bytes to the same place) and, after v4's scan, scans them a second time and
// merges the result, which never changes the answer (the same references, the same arithmetic, a
// subset of each thread's share). t8.slowdown is a declared parameter, a whole number from 0 to 100,
// default 0: then t8 calls v4 itself (its registered entry point), the same code and work. This file
// instantiates only the rescanning kernel, so v4's kernel has one definition in the binary, compiled
// with v4. The copy and the kernel, most of a call, both grow by that share (the transpose and the
// answer copy do not), so the whole call slows by a little less than the parameter says. For example:
//   knnbench-testbin --version v4,t8 --param t8.slowdown=10 --case 8-11
// (It was the variable KNN_SLOWDOWN_PCT, which a run now refuses, naming the parameter.)
#include <fmt/format.h>

#include <stdexcept>

#include "core/registry.hpp"
#include "kernels/argmin/fused_soa.cuh"
#include "kernels/argmin/gpu_frame.hpp"

namespace {

void t8_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  const int percent = int(ctx.env.params.integer("slowdown"));
  // A multiple of 4 references: the rescan then reads whole quads, as v4's scan does.
  const int rescan_n = int(static_cast<long long>(p.n) * percent / 100 / 4 * 4);
  if (rescan_n == 0) {
    const knn::VersionDesc* v4 = knn::Registry::instance().find("v4");
    if (v4 == nullptr) throw std::logic_error("t8: v4 is not registered");
    v4->make()->query(p, out, ctx);
  } else {
    knn::gpu::run_fused_soa<true>(p, out, ctx, rescan_n);
  }
  ctx.path += fmt::format("; test only: uploads and rescans {} of {} references a second time (slowdown={})", rescan_n, p.n, percent);
}

knn::VersionDesc describe() {
  knn::VersionDesc d = knn::gpu::describe_argmin("t8", "test only: v4 uploading and rescanning t8.slowdown % of the references again",
                                                 knn::Family::gpu, knn::GpuNeed::one, t8_query,
                                                 [](const knn::Problem& p, const knn::Environment&) {
                                                   return knn::gpu::fused_soa_device_bytes(p);
                                                 });
  d.params = {knn::ParamDecl::integer("slowdown", 0, 0, 100, "percent of the references uploaded and scanned a second time",
                                      "KNN_SLOWDOWN_PCT")};
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
