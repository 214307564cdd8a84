#pragma once
// The one order of a result row: by squared distance, ties by the smaller reference index (v0's
// rule). Host and device code call the same function, so no version can drift from it.
#include <cstdint>

#if defined(__CUDACC__)
#define KNN_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define KNN_HOST_DEVICE inline
#endif

namespace knn {

// (d1, i1) comes before (d2, i2) in a result row. A NaN distance never comes before anything.
// Called as before(d1, i1, d2, i2) it takes float distances and std::int32_t indices by value. The
// GPU argmin versions compare the fields of a struct in place, before<const float&, const
// std::int32_t&>(...), which is the code nvcc generated for them before they shared this function
// (sm_90 cubins identical byte for byte; by value, their block reductions compile differently).
template <class Distance = float, class Index = std::int32_t>
KNN_HOST_DEVICE bool before(Distance d1, Index i1, Distance d2, Index i2) {
  return d1 < d2 || (d1 == d2 && i1 < i2);
}

}  // namespace knn
