#pragma once
// Warp-wide reductions by a butterfly of shuffles (xor 16, 8, ..., stride): every lane of the group
// ends with the result. The group is the lanes ≡ this one modulo `stride` (a power of two; 1, the
// default, is the whole warp), and `mask` must name exactly them (group_mask), all present.
// Integers reduce exactly; a float sum's order is the butterfly's, the same in every lane.
namespace knn::gpu::warp {

struct Sum {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct Min {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Max {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? b : a; }
};

template <class T, class Op>
__device__ __forceinline__ T all_reduce(T v, Op op, unsigned mask = 0xffffffffu, int stride = 1) {
#pragma unroll
  for (int offset = 16; offset >= stride; offset >>= 1) v = op(v, __shfl_xor_sync(mask, v, offset));
  return v;
}
template <class T>
__device__ __forceinline__ T sum(T v) { return all_reduce(v, Sum{}); }
template <class T>
__device__ __forceinline__ T min(T v) { return all_reduce(v, Min{}); }
template <class T>
__device__ __forceinline__ T max(T v) { return all_reduce(v, Max{}); }

// The lanes ≡ this one modulo `stride` (a power of two, at most 32).
__device__ __forceinline__ unsigned group_mask(int stride) {
  unsigned mask = 0;
  for (int l = (threadIdx.x & 31) & (stride - 1); l < 32; l += stride) mask |= 1u << l;
  return mask;
}

}  // namespace knn::gpu::warp
