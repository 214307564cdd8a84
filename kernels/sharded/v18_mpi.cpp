// v18: past one machine. Under mpirun the references are sharded over the ranks (the harness gives
// each rank only its rows); each rank searches its shard with v15's engine on its GPU (the ranks of
// a host take its GPUs in turn), or with v0's loop on its cores where it has none; the partial
// top-k lists are merged on the owner of each query block by an MPI_Reduce with a merge operator,
// and rank 0 gathers the answer (kernels/sharded/sharded_search.*; docs/scaling.md compares this
// with a reduction of every list on rank 0). Without mpirun it is one rank: the engine alone. v18 declares
// v15's engine's parameters (engine_params()) and gives their values to the engine on each rank.
#include <fmt/format.h>

#include <optional>
#include <string>

#include "core/registry.hpp"
#include "kernels/bruteforce/engine.hpp"
#include "kernels/sharded/sharded_search.hpp"

namespace {

void v18_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  const knn::DeviceInfo* gpu = knn::rank_device(ctx.env);
#if KNN_HAVE_CUDA
  if (gpu != nullptr) {
    knn::Environment one = ctx.env;  // v15's engine runs on env.devices[0]: this rank's GPU
    one.devices = {*gpu};
    ctx.devices_used = {gpu->ordinal};
    knn::TimingSink engine_phases;  // v15's own phases, summed over this call's local searches
    std::string engine_path;
    const auto search = [&](const knn::Problem& sub, knn::Neighbors part) {
      if (sub.n < sub.topk) return knn::sharded::cpu_search(sub, part);  // a shard smaller than topk
      knn::RunContext engine{engine_phases, one, {}, {}};  // one.params: v18's values of the engine's parameters
      knn::gpu::fused_topk_search(sub, part, engine);
      ctx.chosen = engine.chosen;
      if (engine_path.empty()) engine_path = knn::resolve_path(engine);
    };
    const auto detail = [&] {  // this rank's engine: its phases and path
      std::string phases;
      for (const auto& [name, ms] : engine_phases.phases()) phases += fmt::format("{}{} {:.3f}", phases.empty() ? "" : ", ", name, ms);
      return fmt::format("GPU {} [{}]: {}", gpu->ordinal, phases, engine_path.empty() ? "no engine call (shard below topk)" : engine_path);
    };
    return knn::sharded::query(p, out, ctx, search, "v15's engine on its GPU", detail);
  }
#endif
  (void)gpu;
  knn::sharded::query(p, out, ctx, knn::sharded::cpu_search, fmt::format("v0's loop on {} OpenMP threads", ctx.env.omp_threads));
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v18";
  d.title = "MPI: references sharded over the ranks, v15's engine (or v0's loop) per rank, top-k lists merged by MPI_Reduce";
  // Needs no GPU (a rank without one runs v0's loop), so it is not skipped on CPU-only machines.
  d.family = knn::Family::cpu;
  d.self_join = true;
  d.shards_references = true;
  d.supports = [](const knn::Problem& p, const knn::Environment& env) -> std::optional<std::string> {
    if (!knn::sharded::built_with_mpi()) return std::string("built without MPI");
    if (p.topk < 1) return fmt::format("topk {} is not a neighbour count", p.topk);
#if KNN_HAVE_CUDA
    if (knn::rank_device(env) != nullptr && p.topk > knn::gpu::kFusedTopkMax)
      return fmt::format("topk {} over v15's engine's limit of {}", p.topk, knn::gpu::kFusedTopkMax);
#endif
    (void)env;
    return std::nullopt;
  };
  d.make = knn::query_only(v18_query);
  d.params = knn::gpu::engine_params();  // the engine's, for the ranks that run it (none without a GPU)
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
