#pragma once
// Per-device free lists of streams, events and small pinned host blocks (HandlePool).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "core/cuda/error.hpp"

namespace knn::cuda {

// Streams and events are taken from per-device free lists and given back, instead of being created
// and destroyed in every timed call: the create/destroy pairs are driver calls, and in a multi-GPU
// call the GPUs' threads queue for the driver on them. Handles are kept for the process's life (the
// pool is leaked on purpose, so nothing is destroyed after the driver has shut down). Small pinned
// host blocks for downloads are pooled the same way. The mutex is held for a vector push or pop only.
class HandlePool {
 public:
  static HandlePool& instance() {
    static HandlePool* pool = new HandlePool;
    return *pool;
  }
  cudaStream_t take_stream() {
    const int device = current_device();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& free = streams_[device];
      if (!free.empty()) {
        const cudaStream_t s = free.back();
        free.pop_back();
        return s;
      }
    }
    cudaStream_t s = nullptr;
    KNN_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }
  cudaEvent_t take_event() {
    const int device = current_device();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& free = events_[device];
      if (!free.empty()) {
        const cudaEvent_t e = free.back();
        free.pop_back();
        return e;
      }
    }
    cudaEvent_t e = nullptr;
    KNN_CUDA_TRY(cudaEventCreate(&e));
    return e;
  }
  void give(int device, cudaStream_t s) {
    std::lock_guard<std::mutex> lock(mutex_);
    streams_[device].push_back(s);
  }
  void give(int device, cudaEvent_t e) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_[device].push_back(e);
  }
  // Page-locked host memory of at least `bytes` (cudaMallocHost is milliseconds; a pooled block is
  // a vector pop). Returns the block and its size; give it back with give_pinned().
  std::pair<void*, std::size_t> take_pinned(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = pinned_.begin(); it != pinned_.end(); ++it)
        if (it->second >= bytes) {
          const auto block = *it;
          pinned_.erase(it);
          return block;
        }
    }
    constexpr std::size_t kSmallest = std::size_t(64) << 10;
    const std::size_t size = bytes < kSmallest ? kSmallest : bytes;
    void* p = nullptr;
    KNN_CUDA_TRY(cudaMallocHost(&p, size));
    return {p, size};
  }
  void give_pinned(std::pair<void*, std::size_t> block) {
    std::lock_guard<std::mutex> lock(mutex_);
    pinned_.push_back(block);
  }
  static int current_device() {
    int device = 0;
    KNN_CUDA_TRY(cudaGetDevice(&device));
    return device;
  }

 private:
  std::mutex mutex_;
  std::map<int, std::vector<cudaStream_t>> streams_;
  std::map<int, std::vector<cudaEvent_t>> events_;
  std::vector<std::pair<void*, std::size_t>> pinned_;
};

}  // namespace knn::cuda
