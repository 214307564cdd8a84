// Tuning micro-benchmark for v3-v6's scan (kernels/common/argmin.cuh): one-block-per-query argmin
// kernels in several shapes (block size, references per step, AoS / SoA / SoA float4), timed alone
// with events on case 10/11 shapes and two m=1 shapes; every variant is checked against the first.
// Not part of the build. On a GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 scripts/tune/scan_bench.cu -o scan_bench && ./scan_bench 15 [round1]
// docs/tuning.md has the figures it gave on an H100.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e = (x);                                                               \
    if (e != cudaSuccess) {                                                            \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorName(e));              \
      std::exit(3);                                                                    \
    }                                                                                  \
  } while (0)

struct Cand {
  float d;
  int i;
};
__device__ __forceinline__ bool prec(const Cand& a, const Cand& b) { return a.d < b.d || (a.d == b.d && a.i < b.i); }
__device__ __forceinline__ void take(Cand& best, float d, long long j) {
  if (d < best.d) best = {d, int(j)};
}

template <int T>
__device__ __forceinline__ void finish(Cand c, int q, int* idx, float* dist) {
  __shared__ float sd[T];
  __shared__ int si[T];
  sd[threadIdx.x] = c.d;
  si[threadIdx.x] = c.i;
  __syncthreads();
#pragma unroll 1
  for (int off = T / 2; off > 0; off >>= 1) {
    if (threadIdx.x < off) {
      Cand o{sd[threadIdx.x + off], si[threadIdx.x + off]};
      if (prec(o, c)) {
        c = o;
        sd[threadIdx.x] = c.d;
        si[threadIdx.x] = c.i;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    idx[q] = c.i;
    dist[q] = c.d;
  }
}

// MODE 0: 1 ref/step scalar SoA (v4 now). MODE 1: R strided refs/step scalar SoA.
// MODE 2: float4 (4 consecutive refs) per step SoA, ld padded to 4. MODE 3: AoS R strided (v3-like).
// MODE 4: float4 x2 (8 consecutive refs as two quads strided by T quads).
template <int T, int MINB, int MODE, int R, int DIM>
__global__ void __launch_bounds__(T, MINB)
    scan(int dim_rt, int n, long long ld, const float* __restrict__ qs, const float* __restrict__ refs,
         int* __restrict__ idx, float* __restrict__ dist) {
  const int dim = DIM > 0 ? DIM : dim_rt;
  __shared__ float sq[64];
  for (int t = threadIdx.x; t < dim; t += T) sq[t] = qs[blockIdx.x * (long long)dim + t];
  __syncthreads();
  Cand best{INFINITY, INT32_MAX};
  if constexpr (MODE == 0) {
    for (long long j = threadIdx.x; j < n; j += T) {
      float s = 0.f;
#pragma unroll
      for (int t = 0; t < dim; ++t) {
        float df = sq[t] - __ldg(refs + t * ld + j);
        s += df * df;
      }
      take(best, s, j);
    }
  } else if constexpr (MODE == 1 || MODE == 3) {
    long long j = threadIdx.x;
    for (; j + (R - 1) * (long long)T < n; j += R * (long long)T) {
      float s[R];
#pragma unroll
      for (int r = 0; r < R; ++r) s[r] = 0.f;
#pragma unroll
      for (int t = 0; t < dim; ++t) {
        const float qv = sq[t];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const long long jr = j + r * (long long)T;
          float v = MODE == 1 ? __ldg(refs + t * ld + jr) : __ldg(refs + jr * dim + t);
          float df = qv - v;
          s[r] += df * df;
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) take(best, s[r], j + r * (long long)T);
    }
    for (; j < n; j += T) {
      float s = 0.f;
      for (int t = 0; t < dim; ++t) {
        float v = MODE == 1 ? __ldg(refs + t * ld + j) : __ldg(refs + j * dim + t);
        float df = sq[t] - v;
        s += df * df;
      }
      take(best, s, j);
    }
  } else if constexpr (MODE == 2 || MODE == 4) {
    const long long quads = n / 4;
    constexpr int Q = MODE == 2 ? 1 : R;
    long long qd = threadIdx.x;
    for (; qd + (Q - 1) * (long long)T < quads; qd += Q * (long long)T) {
      float4 s[Q];
#pragma unroll
      for (int r = 0; r < Q; ++r) s[r] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int t = 0; t < dim; ++t) {
        const float qv = sq[t];
#pragma unroll
        for (int r = 0; r < Q; ++r) {
          const float4 v = __ldg(reinterpret_cast<const float4*>(refs + t * ld) + qd + r * T);
          float a = qv - v.x, b = qv - v.y, c = qv - v.z, d = qv - v.w;
          s[r].x += a * a;
          s[r].y += b * b;
          s[r].z += c * c;
          s[r].w += d * d;
        }
      }
#pragma unroll
      for (int r = 0; r < Q; ++r) {
        const long long base = 4 * (qd + r * (long long)T);
        take(best, s[r].x, base);
        take(best, s[r].y, base + 1);
        take(best, s[r].z, base + 2);
        take(best, s[r].w, base + 3);
      }
    }
    for (; qd < quads; qd += T) {
      float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
      for (int t = 0; t < dim; ++t) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(refs + t * ld) + qd);
        const float qv = sq[t];
        float a = qv - v.x, b = qv - v.y, c = qv - v.z, d = qv - v.w;
        s.x += a * a;
        s.y += b * b;
        s.z += c * c;
        s.w += d * d;
      }
      take(best, s.x, 4 * qd);
      take(best, s.y, 4 * qd + 1);
      take(best, s.z, 4 * qd + 2);
      take(best, s.w, 4 * qd + 3);
    }
    for (long long j = 4 * quads + threadIdx.x; j < n; j += T) {
      float s = 0.f;
      for (int t = 0; t < dim; ++t) {
        float df = sq[t] - __ldg(refs + t * ld + j);
        s += df * df;
      }
      take(best, s, j);
    }
  }
  finish<T>(best, blockIdx.x, idx, dist);
}

struct Shape {
  int dim, m, n;
};

template <int T, int MINB, int MODE, int R, int DIM>
float run(const char* name, Shape s, const float* dq, const float* dref, long long ld, int* didx, float* ddist,
          std::vector<int>& out, int reps, const std::vector<int>* ref_idx) {
  auto k = scan<T, MINB, MODE, R, DIM>;
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, T, 0));
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, k));
  CK(cudaMemset(didx, 0xff, s.m * sizeof(int)));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ts;
  for (int r = 0; r < reps + 2; ++r) {
    CK(cudaEventRecord(a));
    k<<<s.m, T>>>(s.dim, s.n, ld, dq, dref, didx, ddist);
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

template <int DIM>
void shape(Shape s, int reps, bool only_base, bool round1) {
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
  if (round1) {
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
  shape<3>({3, 1024, 1 << 20}, reps, only_base, round1);
  shape<16>({16, 1024, 1 << 20}, reps, only_base, round1);
  if (round1) return 0;
  shape<3>({3, 1, 1 << 24}, reps, only_base, false);
  shape<16>({16, 1024, 65536}, reps, only_base, false);
  shape<3>({3, 1, 65536}, reps, only_base, false);
  return 0;
}
