// v5: v3 with the references read through 2D textures instead of plain loads, which avoids v4's
// transpose: the texture path caches by 2D locality, so the strided AoS reads of a warp are served
// from the texture cache. The references live in pitched linear memory, one texel row per reference.
// The texels are float4, so one fetch returns four consecutive dimensions: a row is ceil(dim/4)
// texels wide (pitch rounded up to the device's texture pitch alignment) and a reference costs
// ceil(dim/4) fetches instead of dim. Whenever the pitch differs from the host's dim floats per row
// (almost always: dim=3 fills 12 B of a 16 B texel), the pitched storage is zeroed, so the padding
// lanes of the last texel and the row tails hold 0 rather than uninitialised memory, and the
// contiguous upload is re-pitched into it on the device (both in phase "pitch"). Texels are read
// with point sampling as tex2D<float4>(texture, c, row); the padding lanes are never added, and the
// sum runs over the dimensions in order, so the distance is the same float arithmetic as v3's.
// Block size and references fetched per step as v3 (argmin.cuh).
//
// The device's 2D linear-texture limits are read, not assumed: the height limit (65000 texel rows on
// current GPUs) is below many n, so the references are cut into tiles of at most that many rows, one
// texture object per tile, every tile starting on the device's texture base alignment; the kernel
// walks the tiles in order. One tile is the plain path; more are recorded in ctx.path. A row of
// ceil(dim/4) texels beyond the width or pitch limit is a skip with the reason.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/argmin/argmin.cuh"
#include "kernels/argmin/gpu_frame.hpp"

namespace {

using knn::gpu::kRefsPerStep;
constexpr int kNarrow = knn::gpu::kQueryBlockThreadsNarrow;
constexpr int kWide = knn::gpu::kQueryBlockThreadsWide;

inline constexpr int kTexelFloats = 4;  // one float4 texel holds four consecutive dimensions

__host__ __device__ constexpr int texels_per_row(int dim) { return (dim + kTexelFloats - 1) / kTexelFloats; }

// One step of the distance sum: the same expression as knn::gpu::squared_distance's loop body.
__device__ __forceinline__ void add_squared_difference(float& sum, float query, float reference) {
  const float diff = query - reference;
  sum += diff * diff;
}

// Adds dimensions t .. t+lanes-1 (lanes 1..4) of one texel to the sum, in order: the lanes of the last
// texel at or beyond dim (zero padding) are never added, so the sum is bit for bit the per-dimension one.
template <class Query>
__device__ __forceinline__ void add_texel(float& sum, const Query& query, int t, const float4& v, int lanes) {
  add_squared_difference(sum, query(t), v.x);
  if (lanes > 1) add_squared_difference(sum, query(t + 1), v.y);
  if (lanes > 2) add_squared_difference(sum, query(t + 2), v.z);
  if (lanes > 3) add_squared_difference(sum, query(t + 3), v.w);
}

// The texel of `row` (a reference) holding dimensions 4c .. 4c+3. Unnormalised coordinates at texel
// centres, point sampling: the stored floats exactly. Rows are below 65000, exact in float.
__device__ __forceinline__ float4 texel(cudaTextureObject_t texture, int c, long long row) {
  return tex2D<float4>(texture, float(c) + 0.5f, float(row) + 0.5f);
}

// One thread's share of one tile: texel rows threadIdx.x, +kThreads, ... below `rows`, reference
// `first` + row. kRefs rows per step, their fetches of texel c issued together (argmin.cuh says what
// that buys), then the remainder one at a time; rows come in increasing order, so the strict `<`
// keeps the first of equal distances.
template <int kThreads, int kRefs, class Query>
__device__ __forceinline__ knn::gpu::Candidate scan_tile(knn::gpu::Candidate best, int dim, const Query& query,
                                                         cudaTextureObject_t texture, long long rows,
                                                         long long first) {
  const int texels = texels_per_row(dim);
  long long row = threadIdx.x;
  for (; row + (kRefs - 1) * kThreads < rows; row += kRefs * kThreads) {
    float sum[kRefs];
#pragma unroll
    for (int r = 0; r < kRefs; ++r) sum[r] = 0.f;
    for (int c = 0; c < texels; ++c) {
      const int t = c * kTexelFloats;
      const int lanes = min(kTexelFloats, dim - t);
      float4 v[kRefs];
#pragma unroll
      for (int r = 0; r < kRefs; ++r) v[r] = texel(texture, c, row + r * kThreads);
#pragma unroll
      for (int r = 0; r < kRefs; ++r) add_texel(sum[r], query, t, v[r], lanes);
    }
#pragma unroll
    for (int r = 0; r < kRefs; ++r)
      if (sum[r] < best.distance) best = {sum[r], static_cast<std::int32_t>(first + row + r * kThreads)};
  }
  for (; row < rows; row += kThreads) {
    float sum = 0.f;
    for (int c = 0; c < texels; ++c) {
      const int t = c * kTexelFloats;
      add_texel(sum, query, t, texel(texture, c, row), min(kTexelFloats, dim - t));
    }
    if (sum < best.distance) best = {sum, static_cast<std::int32_t>(first + row)};
  }
  return best;
}

// One block answers query blockIdx.x; one thread walks the tiles in order, scanning its rows of each
// (scan_tile), so its references still come in increasing index order; then the block tree picks
// the answer. A reference costs ceil(dim/4) float4 fetches.
template <int kThreads, int kRefs>
__global__ void __launch_bounds__(kThreads, knn::gpu::query_block_min_blocks(kThreads))
    texture_kernel(int dim, int n, int tile_rows, int tiles, const cudaTextureObject_t* __restrict__ textures,
                   const float* __restrict__ queries, std::int32_t* __restrict__ indices,
                   float* __restrict__ distances) {
  knn::gpu::with_block_query(queries + std::size_t(blockIdx.x) * std::size_t(dim), dim, [&](const auto& query) {
    knn::gpu::Candidate best = knn::gpu::no_candidate();
    for (int tile = 0; tile < tiles; ++tile) {
      const long long first = static_cast<long long>(tile) * tile_rows;
      const long long rows = min(static_cast<long long>(tile_rows), n - first);
      best = scan_tile<kThreads, kRefs>(best, dim, query, textures[tile], rows, first);
    }
    knn::gpu::block_store_answer<kThreads>(best, blockIdx.x, indices, distances);
  });
}

template <int kThreads, int kRefs>
void launch(knn::gpu::SingleGpu& gpu, const knn::Problem& p, int tile_rows, int tiles,
            const cudaTextureObject_t* textures, const float* queries, const knn::gpu::DeviceAnswers& answers) {
  texture_kernel<kThreads, kRefs><<<p.m, kThreads, 0, gpu.stream()>>>(p.dim, p.n, tile_rows, tiles, textures, queries,
                                                               answers.indices.data(), answers.distances.data());
}

// How the references are laid out in texture memory on this device.
struct TextureLayout {
  int texels = 0;               // float4 texels per row: ceil(dim/4)
  std::size_t pitch_bytes = 0;  // one reference per row: texels * 16 B, rounded up to the pitch alignment
  std::size_t base_alignment = 0;
  int tile_rows = 0;  // references per texture: the height limit, rounded so every tile stays aligned
  int tiles = 0;
};

TextureLayout plan_layout(const knn::DeviceInfo& device, const knn::Problem& p) {
  int pitch_alignment = 0, base_alignment = 0;
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&pitch_alignment, cudaDevAttrTexturePitchAlignment, device.ordinal));
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&base_alignment, cudaDevAttrTextureAlignment, device.ordinal));
  TextureLayout layout;
  layout.texels = texels_per_row(p.dim);
  if (layout.texels > device.max_texture2d_linear_width)
    throw std::runtime_error(fmt::format("v5: {} float4 texels for k={} exceed the device's 2D linear texture width {}",
                                         layout.texels, p.dim, device.max_texture2d_linear_width));
  const std::size_t row_bytes = std::size_t(layout.texels) * sizeof(float4);
  layout.pitch_bytes = (row_bytes + pitch_alignment - 1) / pitch_alignment * pitch_alignment;
  layout.base_alignment = std::size_t(base_alignment);
  if (layout.pitch_bytes > std::size_t(device.max_texture2d_linear_pitch))
    throw std::runtime_error(fmt::format("v5: texture pitch {} B for k={} exceeds the device's 2D linear pitch {} B",
                                         layout.pitch_bytes, p.dim, device.max_texture2d_linear_pitch));
  // Tile t starts t·tile_rows·pitch bytes in: a multiple of the base alignment when tile_rows is a
  // multiple of alignment / gcd(alignment, pitch).
  const std::size_t step = layout.base_alignment / std::gcd(layout.base_alignment, layout.pitch_bytes);
  layout.tile_rows = int(std::size_t(device.max_texture2d_linear_height) / step * step);
  if (layout.tile_rows < 1)
    throw std::runtime_error(fmt::format("v5: 2D linear texture height {} is below the alignment step {}",
                                         device.max_texture2d_linear_height, step));
  layout.tiles = knn::cuda::divup(p.n, layout.tile_rows);
  return layout;
}

std::optional<std::string> v5_supports(const knn::Problem& p, const knn::Environment& env) {
  if (auto reason = knn::gpu::argmin_supports(p)) return reason;
  if (env.devices.empty()) return std::string("no CUDA device");
  const knn::DeviceInfo& d = env.devices.front();
  const int texels = texels_per_row(p.dim);
  if (texels > d.max_texture2d_linear_width)
    return fmt::format("k={} needs {} float4 texels per row, beyond the 2D linear texture width {}", p.dim, texels,
                       d.max_texture2d_linear_width);
  if (std::size_t(texels) * sizeof(float4) > std::size_t(d.max_texture2d_linear_pitch))
    return fmt::format("k={} needs {} B float4 rows, beyond the 2D linear texture pitch {} B", p.dim,
                       std::size_t(texels) * sizeof(float4), d.max_texture2d_linear_pitch);
  if (d.max_texture2d_linear_height < 1) return std::string("device reports no 2D linear texture height");
  return std::nullopt;
}

std::size_t v5_device_bytes(const knn::Problem& p, const knn::Environment& env) {
  const TextureLayout layout = plan_layout(env.devices.front(), p);
  const bool padded = layout.pitch_bytes != std::size_t(p.dim) * sizeof(float);
  return knn::gpu::float_bytes(p.query_floats() + (padded ? p.reference_floats() : 0)) +
         std::size_t(p.n) * layout.pitch_bytes + layout.base_alignment +
         std::size_t(layout.tiles) * sizeof(cudaTextureObject_t) + knn::gpu::answer_bytes(p);
}

void v5_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  const TextureLayout layout = plan_layout(gpu.device(), p);
  const auto queries = gpu.upload(p.queries, p.query_floats());
  // Pitched storage, with room to move its start up to the base alignment.
  auto storage = gpu.alloc<unsigned char>(std::size_t(p.n) * layout.pitch_bytes + layout.base_alignment);
  const std::uintptr_t raw = reinterpret_cast<std::uintptr_t>(storage.data());
  unsigned char* base = storage.data() + (layout.base_alignment - raw % layout.base_alignment) % layout.base_alignment;
  const std::size_t row_bytes = std::size_t(p.dim) * sizeof(float);  // one host row, unpadded
  knn::cuda::DeviceBuffer<float> staged;  // the contiguous upload, when rows need padding
  if (layout.pitch_bytes == row_bytes) {
    gpu.copy_to_device(reinterpret_cast<float*>(base), p.references, p.reference_floats());
  } else {
    // A host-to-device 2D copy of short rows crawls (tens of ms for 16M rows of 12 B): upload
    // contiguously, then re-pitch on the device. The pitched rows are zeroed first, so the padding
    // lanes of the last texel (and the pitch tail) are defined, though the kernel never adds them.
    staged = gpu.upload(p.references, p.reference_floats());
    gpu.timed("pitch", [&] {
      KNN_CUDA_TRY(cudaMemsetAsync(base, 0, std::size_t(p.n) * layout.pitch_bytes, gpu.stream()));
      KNN_CUDA_TRY(cudaMemcpy2DAsync(base, layout.pitch_bytes, staged.data(), row_bytes, row_bytes, std::size_t(p.n),
                                     cudaMemcpyDeviceToDevice, gpu.stream()));
    });
  }

  cudaTextureDesc sampling{};
  sampling.addressMode[0] = sampling.addressMode[1] = cudaAddressModeClamp;
  sampling.filterMode = cudaFilterModePoint;
  sampling.readMode = cudaReadModeElementType;
  sampling.normalizedCoords = 0;
  std::deque<knn::cuda::TextureObject> textures;  // a deque: TextureObject cannot move
  std::vector<cudaTextureObject_t> handles;
  for (int tile = 0; tile < layout.tiles; ++tile) {
    const long long first = static_cast<long long>(tile) * layout.tile_rows;
    cudaResourceDesc resource{};
    resource.resType = cudaResourceTypePitch2D;
    resource.res.pitch2D.devPtr = base + std::size_t(first) * layout.pitch_bytes;
    resource.res.pitch2D.desc = cudaCreateChannelDesc<float4>();
    resource.res.pitch2D.width = std::size_t(layout.texels);  // in float4 texels
    resource.res.pitch2D.height = std::size_t(std::min<long long>(layout.tile_rows, p.n - first));
    resource.res.pitch2D.pitchInBytes = layout.pitch_bytes;
    handles.push_back(textures.emplace_back(resource, sampling).get());
  }
  const auto device_handles = gpu.upload(handles.data(), handles.size());
  knn::gpu::DeviceAnswers answers = gpu.alloc_answers(p.m);
  const char* long_rows = knn::gpu::wide_row_reason(p.dim);
  int threads = kWide;
  if (long_rows != nullptr)
    gpu.wide_query_blocks(kWide, long_rows);
  else
    threads = gpu.query_block_threads(p.m, texture_kernel<kNarrow, kRefsPerStep>, kNarrow, kWide);
  const cudaTextureObject_t* tiles = device_handles.data();
  gpu.launch("kernel", [&] {
    if (long_rows != nullptr)
      launch<kWide, knn::gpu::kLongRowRefsPerStep>(gpu, p, layout.tile_rows, layout.tiles, tiles, queries.data(), answers);
    else if (threads == kNarrow)
      launch<kNarrow, kRefsPerStep>(gpu, p, layout.tile_rows, layout.tiles, tiles, queries.data(), answers);
    else
      launch<kWide, kRefsPerStep>(gpu, p, layout.tile_rows, layout.tiles, tiles, queries.data(), answers);
  });
  gpu.finish(answers, out, p.m);
  if (layout.tiles > 1)
    gpu.add_path(fmt::format(
        "tiled: {} 2D textures of <= {} references, {} float4 texels each (n={} exceeds the 2D linear texture height {})",
        layout.tiles, layout.tile_rows, layout.texels, p.n, gpu.device().max_texture2d_linear_height));
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v5", "GPU fused kernel, AoS references read through 2D float4 textures",
                                   knn::Family::gpu, knn::GpuNeed::one, v5_query, v5_device_bytes, v5_supports);
}

}  // namespace

KNN_REGISTER_VERSION(describe());
