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
KNN_HOST_DEVICE bool before(float d1, std::int32_t i1, float d2, std::int32_t i2) {
  return d1 < d2 || (d1 == d2 && i1 < i2);
}

}  // namespace knn
