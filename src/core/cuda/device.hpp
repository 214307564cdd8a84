#pragma once
// Device scope and device queries: DeviceScope, the cached occupancy query, divup, TextureObject.
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <tuple>

#include "core/cuda/error.hpp"

namespace knn::cuda {

inline int divup(long long a, long long b) { return int((a + b - 1) / b); }

// Sets the current device for a scope and restores the previous one (faiss DeviceScope).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    KNN_CUDA_TRY(cudaGetDevice(&previous_));
    if (device != previous_) KNN_CUDA_TRY(cudaSetDevice(device));
  }
  ~DeviceScope() { KNN_CUDA_TRY_NO_THROW(cudaSetDevice(previous_)); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

// Resident blocks per SM of `kernel` launched with `threads` threads and no dynamic shared memory
// on device `ordinal` (which must be current), from the occupancy calculator. The answer depends on
// the device, the kernel and the block size only, so it is asked once per process and cached: the
// versions that size their launches with it (v3–v9) would otherwise spend a driver query in every
// timed call.
inline int resident_blocks_per_sm(int ordinal, const void* kernel, int threads) {
  static std::mutex mutex;
  static std::map<std::tuple<int, const void*, int>, int> known;
  const auto key = std::make_tuple(ordinal, kernel, threads);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = known.find(key); it != known.end()) return it->second;
  }
  int per_sm = 0;
  KNN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(key, per_sm);
  return per_sm;
}

// Owns a texture object (v5).
class TextureObject {
 public:
  TextureObject() = default;
  TextureObject(const cudaResourceDesc& res, const cudaTextureDesc& tex) {
    KNN_CUDA_TRY(cudaCreateTextureObject(&t_, &res, &tex, nullptr));
  }
  ~TextureObject() {
    if (t_) KNN_CUDA_TRY_NO_THROW(cudaDestroyTextureObject(t_));
  }
  TextureObject(const TextureObject&) = delete;
  TextureObject& operator=(const TextureObject&) = delete;
  cudaTextureObject_t get() const { return t_; }

 private:
  cudaTextureObject_t t_ = 0;
};

}  // namespace knn::cuda
