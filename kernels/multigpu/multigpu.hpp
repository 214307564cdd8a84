#pragma once
// The multi-GPU driver of v8 and v9: they differ only in the search blocks' reduction.
#include "kernels/argmin/multiblock.hpp"
#include "core/registry.hpp"

namespace knn::gpu {

// Splits the references evenly over ctx.env.devices (the first n % G slices one longer), runs v7's
// path on each slice from its own host thread (OpenMP, one thread per GPU, own stream and copies),
// then merges the per-GPU answers per query on the host, in slice order, with v0's tie rule.
// GPUs whose slice is empty (n < G) do nothing. Phases: per device via TimingSink::add_device, and
// overall as the slowest device's time for each phase, plus the host "merge".
// Device bytes on each GPU: v7's needs for the largest slice.
std::size_t multigpu_device_bytes(const Problem& p, const Environment& env);

void run_multigpu_argmin(const Problem& p, Neighbors out, RunContext& ctx, BlockReduce reduce);

}  // namespace knn::gpu
