#pragma once
// v16.key_sort=count (kdtree_gpu_keysort.cu): a wave's (leaf << 32 | query) keys ordered by leaf in one
// counting pass. CUDA builds only.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace knn::kd {

// Scratch bytes for `bins` leaf values (leaves + 1, the last for finished keys): CUB's scan.
std::size_t count_sort_temp_bytes(int bins);

// `count` keys from `in` into `out` ordered by leaf on `stream`; `counts` and `next` hold `bins`
// values each, `temp` at least count_sort_temp_bytes(bins) bytes.
void count_sort_keys(const std::uint64_t* in, std::uint64_t* out, int count, int bins, unsigned* counts, unsigned* next, void* temp,
                     std::size_t temp_bytes, cudaStream_t stream);

}  // namespace knn::kd
