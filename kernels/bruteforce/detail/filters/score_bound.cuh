#pragma once
// The score filters' device primitives (the tensor-core filter, the fp32 filter and v15's candidate
// buffers; the proof is in kernels/bruteforce/detail/filters/tc_filter.cuh): a query's score threshold, the
// fused scan's exact distance, a lower bound of ‖q − c‖², and the TF32 rounding and product.
#include <cuda_runtime.h>

#include <cstdint>

namespace knn::gpu::tc {

// The threshold for a bound `best` on a query's topk-th distance: a score above it cannot enter the
// answer, nor tie with it.
__device__ __forceinline__ float threshold_for(float best, float norm_low, float band) {
  return __fadd_ru(__fsub_ru(__fmul_ru(best, 1.f + 0x1p-18f), norm_low), band);
}

// The fused scan's distance (kernels/bruteforce/detail/scan/fused_scan.cuh, group_distances): equal bit for
// bit. The rows may be in global or shared memory, or (DIM > 0, every index known at compile time) in
// registers.
template <int DIM = 0>
__device__ __forceinline__ float exact_distance(const float* q, const float* r, int dim = DIM) {
  float e = q[0] - r[0];
  float s = __fmul_rn(e, e);
#pragma unroll
  for (int t = 1; t < (DIM > 0 ? DIM : dim); ++t) {
    e = q[t] - r[t];
    s = __fmaf_rn(e, e, s);
  }
  return s;
}

// Which of Q queries some row of a group of G centred rows x (norms ‖x‖²) scores at or below the
// query's limit, the score being ‖x‖² + w·x (w = −2(q − c)): a bit per query. Every score goes
// straight into its flag, no branch among the G·Q pairs, so their multiply-adds interleave and no
// score stays live (the fp32 filter and v15's candidate buffers).
template <int Q, int DIM, int G>
__device__ __forceinline__ unsigned flag_scores(const float (&w)[Q][DIM], const float (&x)[G][DIM], const float (&norm)[G],
                                                const float (&limit)[Q]) {
  unsigned flagged = 0;
#pragma unroll
  for (int u = 0; u < Q; ++u) {
    bool hit = false;
#pragma unroll
    for (int j = 0; j < G; ++j) {
      float v = norm[j];
#pragma unroll
      for (int t = 0; t < DIM; ++t) v = __fmaf_rn(w[u][t], x[j][t], v);
      hit |= v <= limit[u];
    }
    flagged |= hit ? 1u << u : 0u;
  }
  return flagged;
}

// A lower bound of ‖q − c‖² (the fp32 sum's error is below 2^-18 of it for k ≤ 32).
__device__ __forceinline__ float norm_low(const float* q, int dim, float c) {
  float norm = 0.f;
  for (int i = 0; i < dim; ++i) {
    const float x = __ldg(q + i) - c;
    norm = __fmaf_rn(x, x, norm);
  }
  return __fmul_rd(norm, 1.f - 0x1p-18f);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

}  // namespace knn::gpu::tc
