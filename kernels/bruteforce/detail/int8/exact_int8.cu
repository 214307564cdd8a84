// v15's exact integer path on the GPU (the rules and the plan: exact_int8_plan.cpp): the float
// inputs are copied as they are, turned into shifted int8 rows padded to 16 columns, their squared
// norms summed in int32, and then, a chunk of queries at a time, cuBLAS's int8 GEMM writes every
// dot product q·r (int32) and one block per query selects its topk smallest exact distances
// ‖q‖² + ‖r‖² − 2 q·r from them.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>

#include "core/cuda/runtime.hpp"
#include "kernels/bruteforce/detail/int8/block_select.cuh"
#include "kernels/bruteforce/detail/int8/exact_int8.hpp"
#include "kernels/device/warp_reduce.cuh"

namespace knn::gpu {
namespace {

namespace cuda = knn::cuda;

void cublas_try(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("v15 int8 path: {} failed: {}", what, cublasGetStatusString(s)));
}

// One cuBLAS handle per device for the process's life (creating one costs milliseconds and loads
// kernels; like the stream pool, they are never destroyed, so nothing runs after the driver shut down).
cublasHandle_t handle_for_current_device() {
  static std::mutex mutex;
  static auto* handles = new std::map<int, cublasHandle_t>;
  const int device = cuda::HandlePool::current_device();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles->find(device);
  if (it != handles->end()) return it->second;
  cublasHandle_t h = nullptr;
  cublas_try(cublasCreate(&h), "cublasCreate");
  handles->emplace(device, h);
  return h;
}

// rows × dim floats → padded_rows × padded_dim int8 (value − shift; zero columns and zero rows
// beyond the data).
__global__ void to_int8(const float* __restrict__ in, int rows, int dim, int padded_rows, int padded_dim, float shift,
                        std::int8_t* __restrict__ out) {
  const std::size_t total = std::size_t(padded_rows) * padded_dim;
  for (std::size_t e = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; e < total; e += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t r = e / padded_dim;
    const int c = int(e - r * padded_dim);
    out[e] = r < std::size_t(rows) && c < dim ? static_cast<std::int8_t>(static_cast<int>(in[r * dim + c] - shift)) : 0;
  }
}

// A warp per row: Σ v² in int32 (at most 32768 · 2^14 = 2^29).
__global__ void squared_norms(const std::int8_t* __restrict__ x, int rows, int padded_dim, std::int32_t* __restrict__ out) {
  const int warp = int((blockIdx.x * std::size_t(blockDim.x) + threadIdx.x) >> 5), lane = threadIdx.x & 31;
  if (warp >= rows) return;
  const std::int8_t* row = x + std::size_t(warp) * padded_dim;
  int sum = 0;
  for (int c = lane; c < padded_dim; c += 32) sum += int(row[c]) * int(row[c]);
  sum = knn::gpu::warp::sum(sum);
  if (lane == 0) out[warp] = sum;
}

// Block b answers query first + b from its row of dot products (dots[b · padded_n + j]).
__global__ __launch_bounds__(select::kSelectThreads) void select_from_dots(
    const std::int32_t* __restrict__ dots, int padded_n, const std::int32_t* __restrict__ ref_norms,
    const std::int32_t* __restrict__ query_norms, int n, int first, int topk, bool self_join, std::int32_t* indices,
    float* distances) {
  const int q = first + int(blockIdx.x);
  const std::int32_t* row = dots + std::size_t(blockIdx.x) * padded_n;
  const long long qn = query_norms[q];
  const auto key_of = [&](int j, unsigned long long* key) {
    if (self_join && j == q) return false;
    const long long d = qn + ref_norms[j] - 2ll * row[j];  // exact, 0 ≤ d ≤ k · 255² < 2^31
    *key = select::pack(static_cast<std::uint32_t>(d), j);
    return true;
  };
  select::select_row(n, topk, key_of, indices + std::size_t(q) * topk, distances + std::size_t(q) * topk);
}

// Blocks for one thread per item (squared_norms: a warp per row); grid-stride kernels pass a cap.
int grid_for(std::size_t threads_wanted, int block, std::size_t cap = std::size_t(1) << 30) {
  return int(std::min((threads_wanted + block - 1) / block, cap));
}
constexpr std::size_t kConvertBlocks = std::size_t(1) << 16;  // to_int8 strides over the rest

}  // namespace

void int8_search(const Problem& p, const Int8Plan& plan, Neighbors out, RunContext& ctx) {
  if (!plan.chosen) throw std::logic_error("int8_search: the plan did not choose the int8 path");
  const int pd = plan.padded_dim, pn = plan.padded_n;
  cublasHandle_t blas = handle_for_current_device();
  cuda::Stream stream;
  cublas_try(cublasSetStream(blas, stream), "cublasSetStream");
  cuda::PhaseTimer timer(stream);

  cuda::StreamBuffer<float> references(p.reference_floats(), stream);
  cuda::StreamBuffer<float> own_queries(p.self_join ? 0 : p.query_floats(), stream);
  cuda::StreamBuffer<std::int8_t> references8(std::size_t(pn) * pd, stream);
  cuda::StreamBuffer<std::int8_t> own_queries8(p.self_join ? 0 : std::size_t(p.m) * pd, stream);
  cuda::StreamBuffer<std::int32_t> ref_norms(pn, stream);
  cuda::StreamBuffer<std::int32_t> own_query_norms(p.self_join ? 0 : p.m, stream);
  cuda::StreamBuffer<std::int32_t> dots(std::size_t(plan.query_chunk) * pn, stream);
  cuda::StreamBuffer<std::int32_t> indices(p.result_slots(), stream);
  cuda::StreamBuffer<float> distances(p.result_slots(), stream);

  timer.begin("h2d");
  cuda::upload_inputs(p, references.data(), own_queries.data(), stream);
  timer.end();

  timer.begin("convert");
  constexpr int kBlock = 256;
  to_int8<<<grid_for(std::size_t(pn) * pd, kBlock, kConvertBlocks), kBlock, 0, stream>>>(references.data(), p.n, p.dim, pn, pd,
                                                                          plan.shift, references8.data());
  KNN_CUDA_CHECK_LAUNCH();
  squared_norms<<<grid_for(std::size_t(pn) * 32, kBlock), kBlock, 0, stream>>>(references8.data(), pn, pd, ref_norms.data());
  KNN_CUDA_CHECK_LAUNCH();
  if (!p.self_join) {
    to_int8<<<grid_for(std::size_t(p.m) * pd, kBlock, kConvertBlocks), kBlock, 0, stream>>>(own_queries.data(), p.m, p.dim, p.m, pd,
                                                                             plan.shift, own_queries8.data());
    KNN_CUDA_CHECK_LAUNCH();
    squared_norms<<<grid_for(std::size_t(p.m) * 32, kBlock), kBlock, 0, stream>>>(own_queries8.data(), p.m, pd,
                                                                                   own_query_norms.data());
    KNN_CUDA_CHECK_LAUNCH();
  }
  timer.end();
  const std::int8_t* queries8 = p.self_join ? references8.data() : own_queries8.data();
  const std::int32_t* query_norms = p.self_join ? ref_norms.data() : own_query_norms.data();

  const std::size_t shared = select::shared_bytes(p.topk);
  KNN_CUDA_TRY(cudaFuncSetAttribute(select_from_dots, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  const std::int32_t alpha = 1, beta = 0;
  int rounds = 0;
  for (int first = 0; first < p.m; first += plan.query_chunk, ++rounds) {
    const int count = std::min(plan.query_chunk, p.m - first);
    timer.begin("gemm");
    // dots (pn × count, column-major) = references8ᵀ (pn × pd) · queries8 (pd × count): both
    // operands are row-major int8 rows, which is cuBLAS's column-major "T, N" layout.
    cublas_try(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, pn, count, pd, &alpha, references8.data(), CUDA_R_8I, pd,
                            queries8 + std::size_t(first) * pd, CUDA_R_8I, pd, &beta, dots.data(), CUDA_R_32I, pn,
                            CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (int8, int32 accumulate)");
    timer.end();
    timer.begin("select");
    select_from_dots<<<count, select::kSelectThreads, shared, stream>>>(dots.data(), pn, ref_norms.data(), query_norms,
                                                                       p.n, first, p.topk, p.self_join, indices.data(),
                                                                       distances.data());
    KNN_CUDA_CHECK_LAUNCH();
    timer.end();
  }

  cuda::finish_with_answers(timer, p, indices.data(), distances.data(), out, stream, ctx.timing);
  ctx.path = fmt::format(
      "exact integer path: whole values in [{:g}, {:g}] shifted by {:g} into int8, k = {} padded to {}; int8 GEMM "
      "with int32 accumulation (cuBLAS, tensor cores; no rounding) for {} query chunk{} of up to {}, then a block "
      "per query selects the top {} of its row",
      p.values.lowest, p.values.highest, plan.shift, p.dim, pd, rounds, rounds == 1 ? "" : "s", plan.query_chunk,
      p.topk);
}

}  // namespace knn::gpu
