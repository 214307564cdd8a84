// v5: v3 with the references read through 2D textures instead of plain loads, which avoids v4's
// transpose: the texture path caches by 2D locality, so the strided AoS reads of a warp are served
// from the texture cache. The references live in pitched linear memory, one texel row per reference
// (width dim, pitch rounded up to the device's texture pitch alignment; when that adds padding they
// are uploaded contiguously and re-pitched on the device, phase "pitch"), and are read with point
// sampling as tex2D(texture, t, row).
//
// The device's 2D linear-texture limits are read, not assumed: the height limit (65000 texel rows on
// current GPUs) is below many n, so the references are cut into tiles of at most that many rows, one
// texture object per tile, every tile starting on the device's texture base alignment; the kernel
// walks the tiles in order. One tile is the plain path; more are recorded in ctx.path. A dim beyond
// the width or pitch limit is a skip with the reason.
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

#include "kernels/common/argmin.cuh"
#include "kernels/common/gpu_frame.hpp"

namespace {

using knn::gpu::kSearchThreads;

// Reference j sits in tile j / tile_rows, at texel row j % tile_rows; texel t is its dimension t.
// Unnormalised coordinates at texel centres, point sampling: the stored float exactly.
struct TextureReferences {
  cudaTextureObject_t texture;
  __device__ __forceinline__ float operator()(long long row, int t) const {
    return tex2D<float>(texture, float(t) + 0.5f, float(row) + 0.5f);
  }
};

// One block answers query blockIdx.x; one thread walks the tiles in order and scans texel rows
// threadIdx.x, +blockDim.x, ... of each, so its references still come in increasing index order;
// then the block tree picks the answer.
__global__ void __launch_bounds__(kSearchThreads)
    texture_kernel(int dim, int n, int tile_rows, int tiles, const cudaTextureObject_t* __restrict__ textures,
                   const float* __restrict__ queries, std::int32_t* __restrict__ indices,
                   float* __restrict__ distances) {
  knn::gpu::with_block_query(queries + std::size_t(blockIdx.x) * std::size_t(dim), dim, [&](const auto& query) {
    knn::gpu::Candidate best = knn::gpu::no_candidate();
    for (int tile = 0; tile < tiles; ++tile) {
      const long long first = static_cast<long long>(tile) * tile_rows;
      const TextureReferences refs{textures[tile]};
      const long long rows = min(static_cast<long long>(tile_rows), n - first);
      best = knn::gpu::scan_references(best, threadIdx.x, rows, blockDim.x, first, [&](long long row) {
        return knn::gpu::squared_distance(dim, query, refs, row);
      });
    }
    knn::gpu::block_store_answer(best, blockIdx.x, indices, distances);
  });
}

// How the references are laid out in texture memory on this device.
struct TextureLayout {
  std::size_t pitch_bytes = 0;  // one reference per row
  std::size_t base_alignment = 0;
  int tile_rows = 0;  // references per texture: the height limit, rounded so every tile stays aligned
  int tiles = 0;
};

TextureLayout plan_layout(const knn::DeviceInfo& device, const knn::Problem& p) {
  int pitch_alignment = 0, base_alignment = 0;
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&pitch_alignment, cudaDevAttrTexturePitchAlignment, device.ordinal));
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&base_alignment, cudaDevAttrTextureAlignment, device.ordinal));
  TextureLayout layout;
  const std::size_t row_bytes = std::size_t(p.dim) * sizeof(float);
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
  if (p.dim > d.max_texture2d_linear_width)
    return fmt::format("k={} exceeds the 2D linear texture width {}", p.dim, d.max_texture2d_linear_width);
  if (std::size_t(p.dim) * sizeof(float) > std::size_t(d.max_texture2d_linear_pitch))
    return fmt::format("k={} floats exceed the 2D linear texture pitch {} B", p.dim, d.max_texture2d_linear_pitch);
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
  const std::size_t row_bytes = std::size_t(p.dim) * sizeof(float);
  knn::cuda::DeviceBuffer<float> staged;  // the contiguous upload, when rows need padding
  if (layout.pitch_bytes == row_bytes) {
    gpu.copy_to_device(reinterpret_cast<float*>(base), p.references, p.reference_floats());
  } else {
    // A host-to-device 2D copy of short rows crawls (tens of ms for 16M rows of 12 B): upload
    // contiguously, then re-pitch on the device.
    staged = gpu.upload(p.references, p.reference_floats());
    gpu.timed("pitch", [&] {
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
    resource.res.pitch2D.desc = cudaCreateChannelDesc<float>();
    resource.res.pitch2D.width = std::size_t(p.dim);
    resource.res.pitch2D.height = std::size_t(std::min<long long>(layout.tile_rows, p.n - first));
    resource.res.pitch2D.pitchInBytes = layout.pitch_bytes;
    handles.push_back(textures.emplace_back(resource, sampling).get());
  }
  const auto device_handles = gpu.upload(handles.data(), handles.size());
  knn::gpu::DeviceAnswers answers = gpu.alloc_answers(p.m);
  gpu.launch("kernel", [&] {
    texture_kernel<<<p.m, kSearchThreads, 0, gpu.stream()>>>(p.dim, p.n, layout.tile_rows, layout.tiles,
                                                             device_handles.data(), queries.data(),
                                                             answers.indices.data(), answers.distances.data());
  });
  gpu.finish(answers, out, p.m);
  if (layout.tiles > 1)
    ctx.path = fmt::format("tiled: {} 2D textures of <= {} references (n={} exceeds the 2D linear texture height {})",
                           layout.tiles, layout.tile_rows, p.n, gpu.device().max_texture2d_linear_height);
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v5", "GPU fused kernel, AoS references read through 2D textures",
                                   knn::Family::gpu, knn::GpuNeed::one, v5_query, v5_device_bytes, v5_supports);
}

}  // namespace

KNN_REGISTER_VERSION(describe());
