#pragma once
// Deterministic input generation: the same (distribution, seed, sizes) gives bit-identical
// floats on every machine and compiler. The bits come from a counter-based SplitMix64 stream
// and are mapped to floats with exact arithmetic (see data.cpp), never through <random>'s
// implementation-defined distributions.
#include <cstddef>
#include <cstdint>
#include <string>

namespace knn {

enum class Distribution { uniform, clusters, duplicates, integers };
const char* to_string(Distribution d);
bool parse_distribution(const std::string& s, Distribution& out);

// Which of a case's two point sets is being generated; each gets its own stream.
enum class PointSet : std::uint64_t { queries = 1, references = 2 };

// Fills `count` points of `dim` floats (row-major) for a case.
//  uniform:    each coordinate in [0, 1), a multiple of 2^-24
//  clusters:   16 Gaussian blobs (sigma 0.05) with centres in [0.1, 0.9)^dim, shared by both sets
//  duplicates: coordinates on an 8-level grid {0, 1/8, ..., 7/8}: exact duplicates and ties are common
//  integers:   each coordinate a whole number in [0, integer_max), stored as float (seed 003's
//              rand() % MAX): exact, and with small integer_max full of exact ties
// integer_max is used by `integers` only (1 ≤ integer_max ≤ 2^24, so every value is exact in float).
inline constexpr std::uint32_t kDefaultIntegerMax = 100;
inline constexpr std::uint32_t kMaxIntegerMax = 1u << 24;
void generate_points(Distribution dist, std::uint64_t seed, PointSet set, int dim, std::size_t count, float* out,
                     std::uint32_t integer_max = kDefaultIntegerMax);
// Points [first, first + count) of the same set, bit-identical to those rows of generate_points:
// a rank under mpirun generates its shard alone, and validation any single point.
void generate_point_range(Distribution dist, std::uint64_t seed, PointSet set, int dim, std::size_t first, std::size_t count,
                          float* out, std::uint32_t integer_max = kDefaultIntegerMax);

// 64-bit checksum of a float array's bytes (FNV-1a over 8-byte little-endian words, then a
// SplitMix64 finaliser), printed as 16 hex digits. Equal checksums mean equal inputs.
std::uint64_t checksum(const float* data, std::size_t count);
std::uint64_t checksum_bytes(const void* data, std::size_t bytes);
// The same checksum over data that arrives in pieces of any size.
class Checksum {
 public:
  void add(const void* data, std::size_t bytes);
  std::uint64_t value() const;

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ull;
  std::size_t bytes_ = 0;
  unsigned char pending_[8] = {};  // the bytes of a word not yet complete
  std::size_t pending_bytes_ = 0;
};
std::string to_hex(std::uint64_t v);

// The generator's primitives, exposed for tests.
std::uint64_t splitmix64(std::uint64_t x);
float bits_to_unit_float(std::uint64_t bits);  // top 24 bits → [0, 1)

}  // namespace knn
