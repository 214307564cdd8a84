#pragma once
// Host input buffers from a pluggable allocator: page-locked (cudaMallocHost) on GPU machines so
// copies run at full PCIe/NVLink speed, or ordinary pageable memory as the seeds used.
#include <cstddef>
#include <memory>
#include <string>

#include "core/environment.hpp"

namespace knn {

// The memory --host-memory names: "pinned" or "pageable"; ConfigError (exit 2) for anything else.
HostMemory host_memory_named(const std::string& name);

class HostArray {
 public:
  HostArray() = default;
  // Allocates `count` floats; pinned when asked and possible, pageable otherwise.
  // mode() tells which one was obtained.
  HostArray(std::size_t count, HostMemory wanted);
  float* data() const { return ptr_.get(); }
  // The same storage as another 4-byte type (answer indices).
  template <class T>
  T* as() const {
    static_assert(sizeof(T) == sizeof(float) && alignof(T) <= alignof(float), "HostArray holds 4-byte elements");
    return reinterpret_cast<T*>(ptr_.get());
  }
  std::size_t size() const { return count_; }
  HostMemory mode() const { return mode_; }

 private:
  struct Free {
    HostMemory mode;
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Free> ptr_{nullptr, Free{HostMemory::pageable}};
  std::size_t count_ = 0;
  HostMemory mode_ = HostMemory::pageable;
};

// A pointer and a count, iterable (begin/end) like the vectors it stands in for.
template <class T>
struct Span {
  T* ptr = nullptr;
  std::size_t count = 0;
  T* data() const { return ptr; }
  std::size_t size() const { return count; }
  T* begin() const { return ptr; }
  T* end() const { return ptr + count; }
};

}  // namespace knn
