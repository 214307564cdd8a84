// Tuning micro-benchmark for v3-v6's scan (kernels/argmin/argmin.cuh): one-block-per-query argmin
// kernels in several shapes (block size, references per step, AoS / SoA / SoA float4), each built from
// argmin.cuh's own scans and block tree, timed alone with events on case 10/11 shapes and two m=1
// shapes; every variant is checked against the first.
// Not part of the build. On a GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. -Isrc scripts/tune/scan_bench.cu -o scan_bench && ./scan_bench 15 [round1|harness]
// (round "harness" times v4's own kernel from argmin.cuh beside the bench's, then several queries per block).
// docs/tuning.md has the figures it gave on an H100.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/argmin/argmin.cuh"

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e = (x);                                                               \
    if (e != cudaSuccess) {                                                            \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorName(e));              \
      std::exit(3);                                                                    \
    }                                                                                  \
  } while (0)

using knn::gpu::Candidate;

__device__ __forceinline__ void take(Candidate& best, float d, long long j) {
  if (d < best.distance) best = {d, static_cast<std::int32_t>(j)};
}

// Each variant is one of argmin.cuh's scans (what v3-v6 run), with the query staged in a 64-float
// shared array. MODE 0: one reference per step, SoA (scan_references). MODE 1: R strided references per
// step, SoA (scan_strided). MODE 2: one float4 quad of consecutive references per step, SoA with ld
// padded to 4 (scan_soa_quads, one quad). MODE 3: R strided references per step, AoS (scan_strided,
// v3-like). MODE 4: R quads per step (scan_soa_quads; v4 uses 2). MODE 5: AoS rows as float4s
// (dim % 4 == 0), R strided references per step (scan_strided_vec4). DIM > 0 makes dim a compile-time
// constant. Then the block tree and thread 0's store (block_store_answer).
// EXTRA: floats of static shared memory added (written once, otherwise unused): the footprint of
// with_block_query's staging array, to see what shared memory alone costs.
template <int T, int MINB, int MODE, int R, int DIM, int EXTRA = 0>
__global__ void __launch_bounds__(T, MINB)
    scan(int dim_rt, int n, long long ld, const float* __restrict__ qs, const float* __restrict__ refs,
         int* __restrict__ idx, float* __restrict__ dist) {
  namespace g = knn::gpu;
  const int dim = DIM > 0 ? DIM : dim_rt;
  __shared__ float sq[64];
  for (int t = threadIdx.x; t < dim; t += T) sq[t] = qs[blockIdx.x * (long long)dim + t];
  if constexpr (EXTRA > 0) {
    __shared__ float extra[EXTRA];
    if (threadIdx.x == 0) extra[blockIdx.x % EXTRA] = sq[0];
    if (threadIdx.x == 0 && extra[(blockIdx.x + 1) % EXTRA] == -1.f) sq[0] = 0.f;  // never true: keeps the array
  }
  __syncthreads();
  const g::SharedQuery query{sq};
  Candidate best;
  if constexpr (MODE == 0) {
    const g::SoaReferences soa{refs, ld};
    best = g::scan_references(g::no_candidate(), threadIdx.x, n, T, 0,
                              [&](long long j) { return g::squared_distance(dim, query, soa, j); });
  } else if constexpr (MODE == 1) {
    best = g::scan_strided<R>(dim, query, g::SoaReferences{refs, ld}, threadIdx.x, n, T);
  } else if constexpr (MODE == 2 || MODE == 4) {
    best = g::scan_soa_quads<T, MODE == 2 ? 1 : R>(dim, query, g::SoaQuadReferences{refs, ld}, n);
  } else if constexpr (MODE == 3) {
    best = g::scan_strided<R>(dim, query, g::AosReferences{refs, dim}, threadIdx.x, n, T);
  } else if constexpr (MODE == 5) {
    best = g::scan_strided_vec4<R>(dim, query, g::AosVec4References{refs, dim}, threadIdx.x, n, T);
  }
  g::block_store_answer<T>(best, blockIdx.x, idx, dist);
}

// v4's kernel as kernels/argmin/v4_soa.cu builds it from argmin.cuh's pieces; MINB as its launch bound's
// minimum blocks per SM (v4 uses query_block_min_blocks; 0 names none, as before that was added).
template <int T, int MINB>
__global__ void __launch_bounds__(T, MINB)
    harness_v4(int dim, int n, long long ld, const float* __restrict__ qs, const float* __restrict__ refs,
               int* __restrict__ idx, float* __restrict__ dist) {
  knn::gpu::with_block_query(qs + std::size_t(blockIdx.x) * std::size_t(dim), dim, [&](const auto& query) {
    const knn::gpu::Candidate c = knn::gpu::scan_soa_quads<T>(dim, query, knn::gpu::SoaQuadReferences{refs, ld}, n);
    knn::gpu::block_store_answer<T>(c, blockIdx.x, idx, dist);
  });
}

// The same scan with the query staged in a 64-float shared array (as the bench's own kernels do)
// instead of with_block_query's 1024: tells the shared-memory footprint's cost from the code's.
template <int T, int MINB>
__global__ void __launch_bounds__(T, MINB)
    harness_v4_small_query(int dim, int n, long long ld, const float* __restrict__ qs, const float* __restrict__ refs,
                           int* __restrict__ idx, float* __restrict__ dist) {
  __shared__ float sq[64];
  for (int t = threadIdx.x; t < dim; t += T) sq[t] = qs[blockIdx.x * (long long)dim + t];
  __syncthreads();
  const knn::gpu::Candidate c =
      knn::gpu::scan_soa_quads<T>(dim, knn::gpu::SharedQuery{sq}, knn::gpu::SoaQuadReferences{refs, ld}, n);
  knn::gpu::block_store_answer<T>(c, blockIdx.x, idx, dist);
}

// Several queries per block (not what v3-v6 do; measured for the choice between one and several):
// block b answers queries b*Q .. b*Q+Q-1, staged in shared memory; every reference a thread loads is
// compared with all Q queries. SOA: one float4 quad per dimension and step; else AoS rows, R strided
// references per step. Then Q block trees, one after the other.
template <int T, bool SOA, int Q, int R>
__global__ void __launch_bounds__(T)
    multi_query(int dim, int n, long long ld, const float* __restrict__ qs, const float* __restrict__ refs,
                int* __restrict__ idx, float* __restrict__ dist) {
  __shared__ float sq[Q * 64];
  for (int t = threadIdx.x; t < Q * dim; t += T) sq[t] = qs[blockIdx.x * (long long)(Q * dim) + t];
  __syncthreads();
  Candidate best[Q];
#pragma unroll
  for (int qq = 0; qq < Q; ++qq) best[qq] = knn::gpu::no_candidate();
  if constexpr (SOA) {
    const long long quads = n / 4;
    for (long long qd = threadIdx.x; qd < quads; qd += T) {
      float4 s[Q];
#pragma unroll
      for (int qq = 0; qq < Q; ++qq) s[qq] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
      for (int t = 0; t < dim; ++t) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(refs + t * ld) + qd);
#pragma unroll
        for (int qq = 0; qq < Q; ++qq) knn::gpu::add_squared_differences(s[qq], sq[qq * dim + t], v);
      }
#pragma unroll
      for (int qq = 0; qq < Q; ++qq) knn::gpu::take_quad(best[qq], s[qq], 4 * qd);
    }
    for (long long j = 4 * quads + threadIdx.x; j < n; j += T)
#pragma unroll
      for (int qq = 0; qq < Q; ++qq) {
        float sum = 0.f;
        for (int t = 0; t < dim; ++t) {
          const float df = sq[qq * dim + t] - __ldg(refs + t * ld + j);
          sum += df * df;
        }
        take(best[qq], sum, j);
      }
  } else {
    long long j = threadIdx.x;
    for (; j + (R - 1) * (long long)T < n; j += R * (long long)T) {
      float s[Q][R];
#pragma unroll
      for (int qq = 0; qq < Q; ++qq)
#pragma unroll
        for (int r = 0; r < R; ++r) s[qq][r] = 0.f;
      for (int t = 0; t < dim; ++t) {
        float v[R];
#pragma unroll
        for (int r = 0; r < R; ++r) v[r] = __ldg(refs + (j + r * (long long)T) * dim + t);
#pragma unroll
        for (int qq = 0; qq < Q; ++qq) {
          const float qv = sq[qq * dim + t];
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const float df = qv - v[r];
            s[qq][r] += df * df;
          }
        }
      }
#pragma unroll
      for (int qq = 0; qq < Q; ++qq)
#pragma unroll
        for (int r = 0; r < R; ++r) take(best[qq], s[qq][r], j + r * (long long)T);
    }
    for (; j < n; j += T)
#pragma unroll
      for (int qq = 0; qq < Q; ++qq) {
        float sum = 0.f;
        for (int t = 0; t < dim; ++t) {
          const float df = sq[qq * dim + t] - __ldg(refs + j * dim + t);
          sum += df * df;
        }
        take(best[qq], sum, j);
      }
  }
#pragma unroll 1
  for (int qq = 0; qq < Q; ++qq) {
    knn::gpu::block_store_answer<T>(best[qq], blockIdx.x * Q + qq, idx, dist);
    __syncthreads();  // the block tree's shared arrays are reused by the next query
  }
}

struct Shape {
  int dim, m, n;
};

using Kernel = void (*)(int, int, long long, const float*, const float*, int*, float*);

// Launch options of a timed variant: queries per block (the grid is m / queries_per_block).
struct Launch {
  int queries_per_block = 1;
};

float time_kernel(const char* name, Kernel k, int T, int MINB, Launch l, Shape s, const float* dq, const float* dref,
                  long long ld, int* didx, float* ddist, std::vector<int>& out, int reps,
                  const std::vector<int>* ref_idx) {
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, T, 0));
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, k));
  CK(cudaMemset(didx, 0xff, s.m * sizeof(int)));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ts;
  const int grid = s.m / l.queries_per_block;
  for (int r = 0; r < reps + 2; ++r) {
    CK(cudaEventRecord(a));
    k<<<grid, T>>>(s.dim, s.n, ld, dq, dref, didx, ddist);
    CK(cudaGetLastError());
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 2) ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  out.resize(s.m);
  CK(cudaMemcpy(out.data(), didx, s.m * sizeof(int), cudaMemcpyDeviceToHost));
  int bad = 0;
  if (ref_idx)
    for (int i = 0; i < s.m; ++i) bad += out[i] != (*ref_idx)[i];
  std::printf("k=%2d %-22s T=%4d minb=%d regs=%3d blocks/SM=%d  median %.3f ms  min %.3f  mismatches %d\n", s.dim,
              name, T, MINB, fa.numRegs, per_sm, ts[ts.size() / 2], ts[0], bad);
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return ts[ts.size() / 2];
}

template <int T, int MINB, int MODE, int R, int DIM>
float run(const char* name, Shape s, const float* dq, const float* dref, long long ld, int* didx, float* ddist,
          std::vector<int>& out, int reps, const std::vector<int>* ref_idx) {
  return time_kernel(name, scan<T, MINB, MODE, R, DIM>, T, MINB, Launch{}, s, dq, dref, ld, didx, ddist, out, reps,
                     ref_idx);
}

template <int DIM>
void shape(Shape s, int reps, bool only_base, bool round1, bool harness) {
  std::vector<float> q(size_t(s.m) * s.dim), r(size_t(s.n) * s.dim);
  uint64_t x = 88172645463325252ull + s.dim;
  auto rnd = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return float((x >> 40) & 0xffffff) / float(1 << 24);
  };
  for (auto& v : q) v = rnd();
  for (auto& v : r) v = rnd();
  const long long ld = (s.n + 3) / 4 * 4;
  std::vector<float> soa(size_t(ld) * s.dim, 0.f);
  for (int j = 0; j < s.n; ++j)
    for (int t = 0; t < s.dim; ++t) soa[size_t(t) * ld + j] = r[size_t(j) * s.dim + t];
  float *dq, *daos, *dsoa, *ddist;
  int* didx;
  CK(cudaMalloc(&dq, q.size() * 4));
  CK(cudaMalloc(&daos, r.size() * 4));
  CK(cudaMalloc(&dsoa, soa.size() * 4));
  CK(cudaMalloc(&didx, s.m * 4));
  CK(cudaMalloc(&ddist, s.m * 4));
  CK(cudaMemcpy(dq, q.data(), q.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(daos, r.data(), r.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dsoa, soa.data(), soa.size() * 4, cudaMemcpyHostToDevice));
  std::vector<int> base, o;
  run<1024, 1, 0, 1, 0>("soa base (v4)", s, dq, dsoa, ld, didx, ddist, base, reps, nullptr);
  if (only_base) return;
  if (harness) {
    // The gap between scan_bench's f4x2 and the harness's v4 kernel (the launch bound's minimum blocks
    // per SM), then several queries per block.
    time_kernel("soa f4x2", scan<256, 1, 4, 2, 0>, 256, 1, Launch{}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    time_kernel("harness v4", harness_v4<256, knn::gpu::query_block_min_blocks(256)>, 256,
                knn::gpu::query_block_min_blocks(256), Launch{}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    time_kernel("harness v4 no min", harness_v4<256, 0>, 256, 0, Launch{}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    time_kernel("harness v4 sq64", harness_v4_small_query<256, 4>, 256, 4, Launch{}, s, dq, dsoa, ld, didx, ddist, o,
                reps, &base);
    time_kernel("soa f4x2 +4KiB smem", scan<256, 1, 4, 2, 0, 1024>, 256, 1, Launch{}, s, dq, dsoa, ld, didx, ddist, o,
                reps, &base);
    time_kernel("soa f4x2 minb4", scan<256, 4, 4, 2, 0>, 256, 4, Launch{}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    time_kernel("harness v4", harness_v4<256, 1>, 256, 1, Launch{}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    time_kernel("harness v4", harness_v4<256, 2>, 256, 2, Launch{}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    time_kernel("harness v4", harness_v4<256, 3>, 256, 3, Launch{}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    if (s.dim <= 4) {
      run<256, 1, 3, 4, 0>("aos R4 (v3 narrow)", s, dq, daos, ld, didx, ddist, o, reps, &base);
      run<256, 4, 3, 4, 0>("aos R4 (v3 narrow)", s, dq, daos, ld, didx, ddist, o, reps, &base);
    }
    if (s.dim % 4 == 0) {  // AoS rows of whole float4s (v3 when k % 4 == 0)
      run<1024, 1, 3, 1, 0>("aos base (v3)", s, dq, daos, ld, didx, ddist, o, reps, &base);
      run<1024, 0, 5, 1, 0>("aos f4rows R1", s, dq, daos, ld, didx, ddist, o, reps, &base);
      run<1024, 0, 5, 2, 0>("aos f4rows R2", s, dq, daos, ld, didx, ddist, o, reps, &base);
      run<256, 4, 5, 1, 0>("aos f4rows R1", s, dq, daos, ld, didx, ddist, o, reps, &base);
      run<256, 4, 5, 2, 0>("aos f4rows R2", s, dq, daos, ld, didx, ddist, o, reps, &base);
      run<256, 1, 5, 2, 0>("aos f4rows R2", s, dq, daos, ld, didx, ddist, o, reps, &base);
      run<256, 4, 5, 4, 0>("aos f4rows R4", s, dq, daos, ld, didx, ddist, o, reps, &base);
      run<512, 2, 5, 2, 0>("aos f4rows R2", s, dq, daos, ld, didx, ddist, o, reps, &base);
      run<128, 8, 5, 2, 0>("aos f4rows R2", s, dq, daos, ld, didx, ddist, o, reps, &base);
    }
    if (s.m % 8 == 0) {
      time_kernel("soa f4 Q2", multi_query<256, true, 2, 1>, 256, 1, Launch{2}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
      time_kernel("soa f4 Q4", multi_query<256, true, 4, 1>, 256, 1, Launch{4}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
      time_kernel("soa f4 Q8", multi_query<256, true, 8, 1>, 256, 1, Launch{8}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
      time_kernel("soa f4 Q4", multi_query<128, true, 4, 1>, 128, 1, Launch{4}, s, dq, dsoa, ld, didx, ddist, o, reps, &base);
      time_kernel("aos R4 Q2", multi_query<256, false, 2, 4>, 256, 1, Launch{2}, s, dq, daos, ld, didx, ddist, o, reps, &base);
      time_kernel("aos R4 Q4", multi_query<256, false, 4, 4>, 256, 1, Launch{4}, s, dq, daos, ld, didx, ddist, o, reps, &base);
      time_kernel("aos R2 Q8", multi_query<256, false, 8, 2>, 256, 1, Launch{8}, s, dq, daos, ld, didx, ddist, o, reps, &base);
      time_kernel("aos R1 Q8", multi_query<256, false, 8, 1>, 256, 1, Launch{8}, s, dq, daos, ld, didx, ddist, o, reps, &base);
    }
  } else if (round1) {
    run<1024, 1, 3, 1, 0>("aos base (v3)", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 3, 2, 0>("aos R2", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 3, 4, 0>("aos R4", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 3, 4, DIM>("aos R4 dimT", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<256, 1, 3, 4, 0>("aos R4", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 0, 1, DIM>("soa base dimT", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 1, 2, 0>("soa R2", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 1, 4, 0>("soa R4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 1, 8, 0>("soa R8", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 1, 4, DIM>("soa R4 dimT", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<512, 1, 1, 4, 0>("soa R4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<256, 1, 1, 4, 0>("soa R4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<128, 1, 1, 4, 0>("soa R4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<1024, 2, 1, 2, 0>("soa R2", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<1024, 2, 2, 1, 0>("soa f4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<1024, 2, 2, 1, DIM>("soa f4 dimT", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<256, 8, 2, 1, 0>("soa f4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<256, 8, 1, 4, 0>("soa R4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<1024, 2, 3, 2, 0>("aos R2", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 2, 1, 0>("soa f4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 2, 1, DIM>("soa f4 dimT", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<1024, 1, 4, 2, 0>("soa f4x2", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<512, 1, 2, 1, 0>("soa f4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<256, 1, 2, 1, 0>("soa f4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<256, 1, 4, 2, 0>("soa f4x2", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<128, 1, 2, 1, 0>("soa f4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
  } else {
    run<1024, 1, 3, 1, 0>("aos base (v3)", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<256, 1, 3, 4, 0>("aos R4", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<256, 1, 3, 8, 0>("aos R8", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<512, 1, 3, 4, 0>("aos R4", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<128, 1, 3, 8, 0>("aos R8", s, dq, daos, ld, didx, ddist, o, reps, &base);
    run<256, 1, 1, 8, 0>("soa R8", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<128, 1, 4, 2, 0>("soa f4x2", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<256, 1, 4, 2, 0>("soa f4x2", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<512, 1, 4, 2, 0>("soa f4x2", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<256, 2, 4, 2, 0>("soa f4x2", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<256, 1, 4, 4, 0>("soa f4x4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
    run<128, 1, 4, 4, 0>("soa f4x4", s, dq, dsoa, ld, didx, ddist, o, reps, &base);
  }
  CK(cudaFree(dq));
  CK(cudaFree(daos));
  CK(cudaFree(dsoa));
  CK(cudaFree(didx));
  CK(cudaFree(ddist));
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const bool only_base = argc > 2 && std::strcmp(argv[2], "base") == 0;
  const bool round1 = argc > 2 && std::strcmp(argv[2], "round1") == 0;
  const bool harness = argc > 2 && std::strcmp(argv[2], "harness") == 0;
  shape<3>({3, 1024, 1 << 20}, reps, only_base, round1, harness);
  shape<16>({16, 1024, 1 << 20}, reps, only_base, round1, harness);
  if (harness) shape<16>({16, 1, 1 << 24}, reps, only_base, false, true);  // case 9's shape
  if (round1 || harness) return 0;
  shape<3>({3, 1, 1 << 24}, reps, only_base, false, false);
  shape<16>({16, 1024, 65536}, reps, only_base, false, false);
  shape<3>({3, 1, 65536}, reps, only_base, false, false);
  return 0;
}
