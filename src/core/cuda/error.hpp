#pragma once
// The CUDA error layer: CudaError, CudaOutOfMemory and the KNN_CUDA_TRY macros. Runtime API only,
// so plain C++ files of a CUDA build may include it.
#if !KNN_HAVE_CUDA
#error "core/cuda/error.hpp needs a CUDA build (KNN_HAVE_CUDA=1)"
#endif

#include <cuda_runtime_api.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"

namespace knn::cuda {

// Thrown by KNN_CUDA_TRY; carries the CUDA error code so callers can tell out-of-memory apart.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// Out of device memory: the harness records a skip with the message and carries on.
class CudaOutOfMemory : public OutOfMemoryError {
 public:
  using OutOfMemoryError::OutOfMemoryError;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so later calls are not poisoned by it
  if (err == cudaErrorMemoryAllocation) {
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
    throw CudaOutOfMemory(std::string("out of device memory at ") + file + ":" + std::to_string(line) + " (" + call +
                          "); device has " + std::to_string(free_b >> 20) + " MiB free of " + std::to_string(total_b >> 20) + " MiB");
  }
  throw CudaError(err, std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                           cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

}  // namespace knn::cuda

// Checks a runtime call; throws knn::cuda::CudaError with file:line, the call and the error name.
#define KNN_CUDA_TRY(call)                                                             \
  do {                                                                                 \
    const cudaError_t knn_err_ = (call);                                               \
    if (knn_err_ != cudaSuccess) ::knn::cuda::throw_cuda_error(knn_err_, #call, __FILE__, __LINE__); \
  } while (0)

// Checks the last kernel launch (configuration errors) without synchronising.
#define KNN_CUDA_CHECK_LAUNCH() KNN_CUDA_TRY(cudaGetLastError())

// For destructors: report, never throw.
#define KNN_CUDA_TRY_NO_THROW(call)                                                              \
  do {                                                                                           \
    const cudaError_t knn_err_ = (call);                                                         \
    if (knn_err_ != cudaSuccess)                                                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(knn_err_)); \
  } while (0)
