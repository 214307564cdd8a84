#pragma once
// v16.tail_queue: the last kernel at 32 lanes a query (kdtree_gpu_waves.cuh's search_kernel<DIM, 32> runs one query a
// warp, four a block) as a queue. A grid of at most the warps the device holds at once; each warp runs a query to the end
// and then takes the next one from a counter, so that no warp waits, idle, for the longest chain of its block (the
// last kernel reached 33 % occupancy of a possible 50 % on case 409). The same scans, walk and heap as search_kernel.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/trees/gpu_kdtree/kdtree_gpu_waves.cuh"

namespace knn::kd {

template <int DIM>
__global__ void __launch_bounds__(kWaveBlock) tail_queue_kernel(const SearchArgs a) {
  extern __shared__ __align__(16) float smem[];
  const TreeView& t = a.t;
  const int dim = DIM > 0 ? DIM : t.dim, tid = threadIdx.x, lane = tid & 31;
  int count;
  if (!wave_count(a, count)) return;  // uniform: the other half of the pair runs
  float* heap_d = smem;
  auto* heap_i = reinterpret_cast<std::int32_t*>(heap_d + std::size_t(a.topk) * kWaveBlock);
  knn::gpu::SharedTopK list(heap_d + tid, heap_i + tid, kWaveBlock, a.topk);  // each lane's copy of the query's heap
  const int warps = int(gridDim.x) * (kWaveBlock / 32);
  unsigned visited = 0;
  for (int item = int(blockIdx.x) * (kWaveBlock / 32) + tid / 32; item < count;) {
    const std::uint64_t key = a.keys_in[item];
    const int qid = int(unsigned(key));
    int leaf = int(key >> 32);
    Query<DIM> q;
    q.load(a.queries + std::size_t(qid) * dim, dim);
    std::int32_t* row_i = a.heap_idx + std::size_t(qid) * a.topk;
    float* row_d = a.heap_dist + std::size_t(qid) * a.topk;
    open_heap(a, list, heap_d + tid, heap_i + tid, row_d, row_i);
    const auto take = [&](float d, int r) {  // the index is read only for a candidate
      const std::int32_t id = __ldg(t.index + r);
      if (id >= 0 && !(a.self_join && id == qid)) list.offer(d, id);
    };
    for (; leaf >= 0; ++visited) {
      scan_lanes<DIM, 32>(t, q, leaf, lane, a.vec == 1, 0xffffffffu, [&] { return list.worst_distance(); }, take);
      leaf = next_leaf(t, q, leaf, list.worst_distance(), a.box);
    }
    if (lane == 0) {
      list.store(row_i, row_d);
      a.keys_out[item] = (std::uint64_t(t.leaves) << 32) | unsigned(qid);
    }
    if (a.host_idx != nullptr) {  // answers=direct: the row, just stored by lane 0, on to the pinned output
      __syncwarp();
      for (int s = lane; s < a.topk; s += 32) {
        a.host_idx[std::size_t(qid) * a.topk + s] = row_i[s];
        a.host_dist[std::size_t(qid) * a.topk + s] = row_d[s];
      }
    }
    int claim = 0;
    if (lane == 0) claim = int(atomicAdd(a.claimed, 1u));
    item = warps + __shfl_sync(0xffffffffu, claim, 0);
  }
  if (lane == 0 && visited != 0) atomicAdd(a.visits, (unsigned long long)visited);
}

}  // namespace knn::kd
