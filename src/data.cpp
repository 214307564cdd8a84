#include "data.hpp"

#include <cstring>
#include <vector>

// This file is compiled with -ffp-contract=off (CMakeLists.txt): every float operation below is
// a single IEEE-754 operation, so the results do not depend on the compiler or on FMA hardware.

namespace knn {

const char* to_string(Distribution d) {
  switch (d) {
    case Distribution::uniform: return "uniform";
    case Distribution::clusters: return "clusters";
    case Distribution::duplicates: return "duplicates";
    case Distribution::integers: return "integers";
  }
  return "?";
}

bool parse_distribution(const std::string& s, Distribution& out) {
  if (s == "uniform") out = Distribution::uniform;
  else if (s == "clusters") out = Distribution::clusters;
  else if (s == "duplicates") out = Distribution::duplicates;
  else if (s == "integers") out = Distribution::integers;
  else return false;
  return true;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

float bits_to_unit_float(std::uint64_t bits) {
  // 24 random bits scaled by 2^-24: exact in float, uniform on a 2^-24 grid in [0, 1).
  return float(bits >> 40) * (1.0f / 16777216.0f);
}

namespace {

constexpr int kClusters = 16;
constexpr double kClusterSigma = 0.05;
constexpr int kGridLevels = 8;

// Counter-based stream: word i of stream s is splitmix64(key(seed, s) + i), so any element can
// be generated independently (and in parallel) with the same result.
struct Stream {
  std::uint64_t key;
  Stream(std::uint64_t seed, std::uint64_t stream) : key(splitmix64(seed ^ splitmix64(stream * 0xD1B54A32D192ED03ull))) {}
  std::uint64_t operator()(std::uint64_t i) const { return splitmix64(key + i * 0x9E3779B97F4A7C15ull); }
};

// Irwin–Hall approximation of a standard normal: the sum of 12 uniforms minus 6, computed in
// double where the sum of twelve 24-bit fractions is exact.
double approx_normal(const Stream& s, std::uint64_t base) {
  double sum = 0.0;
  for (int r = 0; r < 12; ++r) sum += double(s(base + r) >> 40) * (1.0 / 16777216.0);
  return sum - 6.0;
}

}  // namespace

void generate_points(Distribution dist, std::uint64_t seed, PointSet set, int dim, std::size_t count, float* out,
                     std::uint32_t integer_max) {
  generate_point_range(dist, seed, set, dim, 0, count, out, integer_max);
}

void generate_point_range(Distribution dist, std::uint64_t seed, PointSet set, int dim, std::size_t first, std::size_t count,
                          float* out, std::uint32_t integer_max) {
  const Stream stream(seed, static_cast<std::uint64_t>(set));
  // Word i of the range is word i + first·dim of the whole set.
  const std::uint64_t skip = std::uint64_t(first) * std::uint64_t(dim);
  const auto s = [&](std::uint64_t i) { return stream(i + skip); };
  const std::size_t total = count * std::size_t(dim);
  switch (dist) {
    case Distribution::uniform: {
#pragma omp parallel for schedule(static)
      for (long long i = 0; i < (long long)total; ++i) out[i] = bits_to_unit_float(s(std::uint64_t(i)));
      break;
    }
    case Distribution::duplicates: {
#pragma omp parallel for schedule(static)
      for (long long i = 0; i < (long long)total; ++i)
        out[i] = float(s(std::uint64_t(i)) >> 61) * (1.0f / kGridLevels);  // 3 bits: 8 levels
      break;
    }
    case Distribution::integers: {
      // (bits >> 32) · max / 2^32: a whole number in [0, max), exact in 64-bit integers.
      const std::uint64_t max = integer_max == 0 ? 1 : integer_max;
#pragma omp parallel for schedule(static)
      for (long long i = 0; i < (long long)total; ++i)
        out[i] = float(((s(std::uint64_t(i)) >> 32) * max) >> 32);
      break;
    }
    case Distribution::clusters: {
      // Centres come from a stream shared by queries and references (stream 0).
      const Stream cs(seed, 0);
      std::vector<double> centres(std::size_t(kClusters) * dim);
      for (std::size_t c = 0; c < centres.size(); ++c) centres[c] = 0.1 + 0.8 * (double(cs(c) >> 40) * (1.0 / 16777216.0));
      // Point p uses words [p*(1 + 12*dim), ...): one for its cluster, twelve per coordinate.
      const std::uint64_t words_per_point = 1 + 12 * std::uint64_t(dim);
#pragma omp parallel for schedule(static)
      for (long long p = 0; p < (long long)count; ++p) {
        const std::uint64_t base = (std::uint64_t(p) + first) * words_per_point;
        const int cluster = int((stream(base) >> 32) % kClusters);
        for (int t = 0; t < dim; ++t) {
          const double v = centres[std::size_t(cluster) * dim + t] + kClusterSigma * approx_normal(stream, base + 1 + 12 * std::uint64_t(t));
          out[std::size_t(p) * dim + t] = float(v);
        }
      }
      break;
    }
  }
}

void Checksum::add(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  bytes_ += bytes;
  std::size_t i = 0;
  while (pending_bytes_ > 0 && pending_bytes_ < 8 && i < bytes) pending_[pending_bytes_++] = p[i++];
  std::uint64_t h = h_, w;
  if (pending_bytes_ == 8) {
    std::memcpy(&w, pending_, 8);
    h = (h ^ w) * 0x100000001b3ull;
    pending_bytes_ = 0;
  }
  for (; i + 8 <= bytes; i += 8) {
    std::memcpy(&w, p + i, 8);  // little-endian hosts only (x86-64, aarch64)
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; i < bytes; ++i) pending_[pending_bytes_++] = p[i];
  h_ = h;
}

std::uint64_t Checksum::value() const {
  std::uint64_t h = h_;
  for (std::size_t i = 0; i < pending_bytes_; ++i) h = (h ^ pending_[i]) * 0x100000001b3ull;  // the tail, byte by byte
  return splitmix64(h ^ bytes_);
}

std::uint64_t checksum_bytes(const void* data, std::size_t bytes) {
  Checksum c;
  c.add(data, bytes);
  return c.value();
}

std::uint64_t checksum(const float* data, std::size_t count) { return checksum_bytes(data, count * sizeof(float)); }

std::string to_hex(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = digits[v & 0xf];
  return s;
}

}  // namespace knn
