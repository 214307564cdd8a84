#include "answers_npy.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>

namespace knn {

void write_npy(const std::string& path, const void* data, const char* dtype, std::int64_t rows, std::int64_t cols) {
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}", dtype, rows, cols);
  // magic (6) + version (2) + header length (2) + header + '\n', padded with spaces to 64 bytes.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  const std::uint16_t hlen = std::uint16_t(header.size());
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), std::fclose);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write ({})", path, std::strerror(errno)));
  const unsigned char preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<unsigned char>(hlen & 0xff),
                                      static_cast<unsigned char>(hlen >> 8)};
  const std::size_t bytes = std::size_t(rows) * std::size_t(cols) * 4;
  if (std::fwrite(preamble, 1, sizeof preamble, f.get()) != sizeof preamble ||
      std::fwrite(header.data(), 1, header.size(), f.get()) != header.size() ||
      (bytes > 0 && std::fwrite(data, 1, bytes, f.get()) != bytes))
    throw std::runtime_error(fmt::format("{}: write failed ({})", path, std::strerror(errno)));
  if (std::fclose(f.release()) != 0) throw std::runtime_error(fmt::format("{}: write failed ({})", path, std::strerror(errno)));
}

std::string dump_answers(const std::string& dir, int case_id, const std::string& version, const std::int32_t* indices,
                         const float* distances, std::int64_t m, std::int64_t topk) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("--dump-answers {}: cannot create the folder ({})", dir, ec.message()));
  const std::string base = (std::filesystem::path(dir) / fmt::format("case{}-{}", case_id, version)).string();
  write_npy(base + "-indices.npy", indices, "<i4", m, topk);
  write_npy(base + "-distances.npy", distances, "<f4", m, topk);
  return base + "-indices.npy";
}

}  // namespace knn
