// v16's launches: the k compiled into the search kernels, the heap kernel's shared memory, and the
// lanes per query of a wave (kdtree_gpu_waves.cuh holds the kernels). Included by v16_gpu_kdtree.cu only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "core/cuda/runtime.hpp"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_tail.cuh"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_waves.cuh"

namespace knn::kd {

// The k compiled into the search kernels (the query in registers, leaf rows as float4 groups); any
// other k runs with k read at run time, one float at a time. 7 and 8 are the seeds' (cases 407 and
// 300-302): at run time 407 took 154 ms against 96.5 for 409 (compiled in) with a third of its leaves.
#define KNN_V16_COMPILED_DIMS 1, 2, 3, 5, 7, 8, 9, 12, 16

inline bool compiled_dim(int dim) {
  for (const int d : {KNN_V16_COMPILED_DIMS})
    if (d == dim) return true;
  return false;
}

// Floats per staged row: rounded up to whole float4s for the compiled-in k (as the kernel does).
inline int staged_stride(int dim) { return compiled_dim(dim) ? (dim + 3) / 4 * 4 : dim; }

// The heap kernel's shared memory: the heaps, the staged leaves, and v16.first_batch's buffer (the first wave at one lane a key).
inline std::size_t search_shared(int topk, int stage_leaves, int leaf_size, int dim, int batch = 0) {
  return std::size_t(2) * topk * kWaveBlock * 4 + std::size_t(stage_leaves) * leaf_size * (staged_stride(dim) + 1) * 4 +
         std::size_t(batch) * kWaveBlock * 8;
}

// `lanes` threads per key; the heap kernel takes its heaps' shared memory.
inline void launch_kernel(void (*kernel)(SearchArgs), const SearchArgs& a, bool heap, int lanes, cudaStream_t stream) {
  const std::size_t shared = heap ? search_shared(a.topk, a.stage_leaves, a.t.leaf_size, a.t.dim, lanes == 1 ? a.batch : 0) : 0;
  KNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  const long long threads = (long long)a.count * lanes;
  kernel<<<unsigned((threads + kWaveBlock - 1) / kWaveBlock), kWaveBlock, shared, stream>>>(a);
  KNN_CUDA_CHECK_LAUNCH();
}

// v16.tail_queue: at most the blocks the device holds at once, their warps taking queries from a.claimed (zeroed here).
template <int DIM>
void launch_tail_queue(const SearchArgs& a, cudaStream_t stream) {
  const std::size_t shared = search_shared(a.topk, 0, a.t.leaf_size, a.t.dim);
  KNN_CUDA_TRY(cudaFuncSetAttribute(tail_queue_kernel<DIM>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  int device = 0, sms = 0, per_sm = 0;
  KNN_CUDA_TRY(cudaGetDevice(&device));
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  KNN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, tail_queue_kernel<DIM>, kWaveBlock, shared));
  const long long needed = ((long long)a.count * 32 + kWaveBlock - 1) / kWaveBlock;
  KNN_CUDA_TRY(cudaMemsetAsync(a.claimed, 0, sizeof(unsigned), stream));
  tail_queue_kernel<DIM><<<unsigned(std::max(1LL, std::min(needed, (long long)sms * std::max(per_sm, 1)))), kWaveBlock, shared, stream>>>(a);
  KNN_CUDA_CHECK_LAUNCH();
}

template <int DIM>
void launch_search(const SearchArgs& a, bool heap, int lanes, cudaStream_t stream) {
  if constexpr (DIM > 0 && DIM <= gpu::kTileFoldDims)  // v16.tc: the sorted waves' heap kernel
    if (a.tc.rows != nullptr && lanes == 1 && heap && a.batch == 0)
      return launch_kernel(a.tc_regs64 ? search_kernel_capped<DIM, 8> : search_kernel<DIM, 1, false, true>, a, heap, 1, stream);
  switch (lanes) {
    case 1: return launch_kernel(!heap ? nearest_kernel<DIM, 1> : a.batch > 0 ? search_kernel<DIM, 1, true> : search_kernel<DIM, 1>, a, heap, 1, stream);
    case 2: return launch_kernel(heap ? search_kernel<DIM, 2> : nearest_kernel<DIM, 2>, a, heap, 2, stream);
    case 4: return launch_kernel(heap ? search_kernel<DIM, 4> : nearest_kernel<DIM, 4>, a, heap, 4, stream);
    case 16: if (heap) return launch_kernel(search_kernel<DIM, 16>, a, heap, 16, stream); break;  // the heap kernel only (v16.tail_lanes)
    case 32:
      if (heap && a.to_end && a.claimed != nullptr) return launch_tail_queue<DIM>(a, stream);
      if (heap) return launch_kernel(search_kernel<DIM, 32>, a, heap, 32, stream);
      break;
    default: break;
  }
  launch_kernel(heap ? search_kernel<DIM, 8> : nearest_kernel<DIM, 8>, a, heap, 8, stream);
}

template <int DIM, int... More>
void dispatch(const SearchArgs& a, bool heap, int lanes, cudaStream_t stream) {  // the compiled-in k (compiled_dim), else k = 0
  if constexpr (DIM == 0) {
    launch_search<0>(a, heap, lanes, stream);
  } else if (a.t.dim != DIM) {
    dispatch<More...>(a, heap, lanes, stream);
  } else {
    launch_search<DIM>(a, heap, lanes, stream);
  }
}

// Lanes per query: the knob's (`knob`, 0: auto), else the fewest of 1, 2, 4, 8 that give the wave
// twice the threads the device holds at once; never past 2^31 threads. The nearest-pair kernel stops at 8.
inline int lanes_for(int knob, long long count, long long resident) {
  int lanes = knob;
  if (lanes == 0)
    for (lanes = 1; lanes < 8 && count * lanes < 2 * resident;) lanes *= 2;
  while (lanes > 1 && count * lanes > 0x7fffffffLL) lanes /= 2;
  return lanes;
}

}  // namespace knn::kd
