#pragma once
// Writing test data files byte for byte (the data-file tests): plain, gzipped, and the big-endian
// 32-bit words of IDX headers.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace knn::testing {

inline void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

inline void write_gz(const std::string& path, const std::string& bytes) {
  gzFile g = gzopen(path.c_str(), "wb");
  ASSERT_NE(g, nullptr) << path;
  ASSERT_EQ(gzwrite(g, bytes.data(), unsigned(bytes.size())), int(bytes.size())) << path;
  ASSERT_EQ(gzclose(g), Z_OK) << path;
}

inline std::string be32(std::uint32_t x) { return {char(x >> 24), char(x >> 16), char(x >> 8), char(x)}; }

}  // namespace knn::testing
