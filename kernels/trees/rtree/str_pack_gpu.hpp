#pragma once
// The GPU STR builder (str_pack.cu): the same tree as knn::str::build_host (str_pack.hpp), built on
// one stream with CUB radix sorts (one per pass), every level enqueued from the host-known shape
// with no synchronisation in between. CUDA builds only.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/cuda/buffers.hpp"
#include "kernels/trees/rtree/str_pack.hpp"

namespace knn::str {

// A packed tree on the current device; its buffers belong to `stream` (cuda::StreamBuffer).
struct DeviceTree {
  Shape shape;
  cuda::StreamBuffer<float> points, lo, hi;
  cuda::StreamBuffer<std::int32_t> index, begin, end;
};

// Enqueues the packing of n device points (row-major n × dim) on `stream`. Throws
// std::invalid_argument as plan_tree does.
DeviceTree build_device(const float* points, std::int64_t n, int dim, int fanout, cudaStream_t stream);

// Device bytes build_device allocates for n points, at most (tree plus scratch).
std::size_t device_bytes(std::int64_t n, int dim, int fanout);

// Uploads n host points, packs them on the current device and downloads the tree (the tests hold it
// against build_host).
Tree build_on_device(const float* points, std::int64_t n, int dim, int fanout);

}  // namespace knn::str
