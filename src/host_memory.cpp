#include "host_memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include "core/errors.hpp"

#if KNN_HAVE_CUDA
#include "core/cuda/runtime.hpp"
#endif

namespace knn {

HostMemory host_memory_named(const std::string& name) {
  if (name == "pinned") return HostMemory::pinned;
  if (name == "pageable") return HostMemory::pageable;
  throw ConfigError(fmt::format("--host-memory {}: expected pinned or pageable", name));
}

void HostArray::Free::operator()(float* p) const {
#if KNN_HAVE_CUDA
  if (mode == HostMemory::pinned) {
    KNN_CUDA_TRY_NO_THROW(cudaFreeHost(p));
    return;
  }
#endif
  std::free(p);
}

HostArray::HostArray(std::size_t count, HostMemory wanted) : count_(count) {
  const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(float);
#if KNN_HAVE_CUDA
  if (wanted == HostMemory::pinned) {
    void* p = nullptr;
    KNN_CUDA_TRY(cudaMallocHost(&p, bytes));
    ptr_ = std::unique_ptr<float, Free>(static_cast<float*>(p), Free{HostMemory::pinned});
    mode_ = HostMemory::pinned;
    return;
  }
#else
  (void)wanted;
#endif
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  ptr_ = std::unique_ptr<float, Free>(static_cast<float*>(p), Free{HostMemory::pageable});
  mode_ = HostMemory::pageable;
}

}  // namespace knn
