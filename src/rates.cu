// The rates of one GPU, measured once at start-up after the warm-up (rates.hpp): four cuBLAS
// GEMMs (fp32, TF32, int8, fp16), a device-to-device copy and the four host copies. Each is timed a few
// times after one untimed call; the best time gives the rate. About 100 ms on an H100.
#include "core/cuda/cublas.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "core/cuda/runtime.hpp"
#include "rates.hpp"

namespace knn::detail {
namespace {

constexpr int kTimed = 3;  // timed repetitions after one untimed call; the best counts

void blas_try(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("start-up rates: {} failed: {}", what, knn::cuda::blas::api().status_string(s)));
}

// Fills `bytes` bytes with a hash of their offset: GEMMs on zeros draw less power than on data.
__global__ void fill_kernel(std::uint32_t* out, std::size_t words, std::uint32_t mask) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words; i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t h = std::uint32_t(i) * 2654435761u;
    h ^= h >> 15;
    out[i] = (h * 2246822519u) & mask;
  }
}

// The best of kTimed timings of `op` (ms) between events on the default stream, after one untimed call.
template <class Op>
double best_device_ms(Op op) {
  cudaEvent_t start, stop;
  KNN_CUDA_TRY(cudaEventCreate(&start));
  KNN_CUDA_TRY(cudaEventCreate(&stop));
  op();
  double best = 1e30;
  for (int i = 0; i < kTimed; ++i) {
    KNN_CUDA_TRY(cudaEventRecord(start));
    op();
    KNN_CUDA_TRY(cudaEventRecord(stop));
    KNN_CUDA_TRY(cudaEventSynchronize(stop));
    float ms = 0;
    KNN_CUDA_TRY(cudaEventElapsedTime(&ms, start, stop));
    best = std::min(best, double(ms));
  }
  KNN_CUDA_TRY(cudaEventDestroy(start));
  KNN_CUDA_TRY(cudaEventDestroy(stop));
  return best;
}

// The best of kTimed host-side timings (ms) of a synchronous copy, as a version's cudaMemcpy sees it.
double best_copy_ms(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  KNN_CUDA_TRY(cudaMemcpy(dst, src, bytes, kind));
  double best = 1e30;
  for (int i = 0; i < kTimed; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    KNN_CUDA_TRY(cudaMemcpy(dst, src, bytes, kind));
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

double per_second(double amount, double ms, double unit) { return amount / (ms * 1e-3) / unit; }

}  // namespace

DeviceRates measure_rates_on(int device) {
  // Loaded before the clock starts (once per process; its time is the library's start-up, not the rates').
  const auto& blas = knn::cuda::blas::require("start-up rates");
  const auto t0 = std::chrono::steady_clock::now();
  cuda::DeviceScope scope(device);
  DeviceRates r;
  // Square GEMMs: 4096 for fp32 (some 3 ms on an H100), 8192 for the tensor-core ones, which need
  // the larger size to reach their rate. One buffer holds A, B and C of the largest.
  constexpr long long kSgemm = 4096, kTensor = 8192;
  constexpr std::size_t kCopyBytes = std::size_t(64) << 20;
  const std::size_t words = std::size_t(3) * kTensor * kTensor;  // A, B, C of fp32 (int8 needs less)
  cuda::DeviceBuffer<std::uint32_t> buf(words);
  fill_kernel<<<1024, 256>>>(buf.data(), words, 0x3f7f7f7fu);  // floats in [0, 1), any int8 byte
  KNN_CUDA_CHECK_LAUNCH();

  cublasHandle_t h = nullptr;
  blas_try(blas.create(&h), "cublasCreate");
  struct Destroy {
    cublasHandle_t h;
    ~Destroy() { knn::cuda::blas::api().destroy(h); }
  } destroy{h};
  auto* words_at = buf.data();
  const auto gemm = [&](long long s, cudaDataType in, cudaDataType out, cublasComputeType_t compute, const void* alpha, const void* beta) {
    const std::size_t in_bytes = in == CUDA_R_8I ? 1 : in == CUDA_R_16F ? 2 : 4;
    const char* a = reinterpret_cast<const char*>(words_at);
    const char* b = a + std::size_t(s) * s * in_bytes;
    void* c = const_cast<char*>(b + std::size_t(s) * s * in_bytes);
    const int n = int(s);
    return best_device_ms([&] {
      blas_try(blas.gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, alpha, a, in, n, b, in, n, beta, c, out, n, compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
    });
  };
  const float one = 1.f, zero = 0.f;
  const std::int32_t ione = 1, izero = 0;
  const auto ops = [](long long s) { return 2.0 * double(s) * double(s) * double(s); };
  r.sgemm_tflops = per_second(ops(kSgemm), gemm(kSgemm, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, &one, &zero), 1e12);
  r.tf32_tflops = per_second(ops(kTensor), gemm(kTensor, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, &one, &zero), 1e12);
  r.int8_tops = per_second(ops(kTensor), gemm(kTensor, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, &ione, &izero), 1e12);
  // fp16 in, fp32 sums (v15's tile filter's products): the operands refilled as halves in [0, 1). Its
  // failure leaves the rate at 0 ("not measured": the floors then take TF32's and say so), not the run.
  fill_kernel<<<1024, 256>>>(buf.data(), words, 0x3bff3bffu);
  KNN_CUDA_CHECK_LAUNCH();
  try {
    r.fp16_tflops = per_second(ops(kTensor), gemm(kTensor, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, &one, &zero), 1e12);
  } catch (const std::runtime_error& e) {
    r.fp16_tflops = 0;
    fmt::print(stderr, "knnbench: warning: GPU {}: fp16 rate not measured ({}); floors there take TF32's rate\n", device, e.what());
  }

  // Device memory: a copy reads and writes every byte.
  const std::size_t d2d_bytes = std::size_t(kTensor) * kTensor * 4;
  r.d2d_gbps = per_second(2.0 * double(d2d_bytes), best_device_ms([&] {
                            KNN_CUDA_TRY(cudaMemcpyAsync(buf.data() + d2d_bytes / 4, buf.data(), d2d_bytes, cudaMemcpyDeviceToDevice));
                          }),
                          1e9);

  // Host copies of 64 MiB, from and into pinned and pageable (touched, so resident) memory.
  cuda::PinnedBuffer<char> pinned(kCopyBytes);
  std::fill(pinned.data(), pinned.data() + kCopyBytes, char(1));
  std::vector<char> pageable(kCopyBytes, char(1));
  void* dev = buf.data();
  r.h2d_pinned_gbps = per_second(double(kCopyBytes), best_copy_ms(dev, pinned.data(), kCopyBytes, cudaMemcpyHostToDevice), 1e9);
  r.h2d_pageable_gbps = per_second(double(kCopyBytes), best_copy_ms(dev, pageable.data(), kCopyBytes, cudaMemcpyHostToDevice), 1e9);
  r.d2h_pinned_gbps = per_second(double(kCopyBytes), best_copy_ms(pinned.data(), dev, kCopyBytes, cudaMemcpyDeviceToHost), 1e9);
  r.d2h_pageable_gbps = per_second(double(kCopyBytes), best_copy_ms(pageable.data(), dev, kCopyBytes, cudaMemcpyDeviceToHost), 1e9);
  KNN_CUDA_TRY(cudaDeviceSynchronize());
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace knn::detail
