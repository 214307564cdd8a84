#include "answers_npy.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "output_file.hpp"

namespace knn {
namespace {

std::string dump_base(const std::string& dir, int case_id, const std::string& version) {
  return (std::filesystem::path(dir) / fmt::format("case{}-{}", case_id, version)).string();
}

// One 2-D little-endian array as .npy version 1.0 (the header padded to 64 bytes), written to `path`,
// a new file (O_EXCL, never through a link); `dtype` is "<i4" or "<f4". Errors name `label` (the
// final name) and the reason; a file begun is removed.
void write_npy(const std::string& path, const std::string& label, const void* data, const char* dtype, std::int64_t rows, std::int64_t cols) {
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}", dtype, rows, cols);
  // magic (6) + version (2) + header length (2) + header + '\n', padded with spaces to 64 bytes.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  const std::uint16_t hlen = std::uint16_t(header.size());
  const char preamble[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, char(hlen & 0xff), char(hlen >> 8)};
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot create {} ({})", label, path, std::strerror(errno)));
  bool open = true;
  try {
    write_all(fd, std::string(preamble, sizeof preamble) + header, label);
    write_all(fd, static_cast<const char*>(data), std::size_t(rows) * std::size_t(cols) * 4, label);
    if (::fdatasync(fd) != 0 && errno != EINVAL) throw std::runtime_error(fmt::format("{}: fdatasync failed ({})", label, std::strerror(errno)));
    open = false;
    if (::close(fd) != 0) throw std::runtime_error(fmt::format("{}: write failed ({})", label, std::strerror(errno)));
  } catch (const std::exception& e) {
    if (open) ::close(fd);
    ::unlink(path.c_str());
    throw std::runtime_error(e.what());
  }
}

}  // namespace

std::string dump_indices_path(const std::string& dir, int case_id, const std::string& version) {
  return dump_base(dir, case_id, version) + "-indices.npy";
}
std::string dump_distances_path(const std::string& dir, int case_id, const std::string& version) {
  return dump_base(dir, case_id, version) + "-distances.npy";
}

std::string dump_answers(const std::string& dir, int case_id, const std::string& version, const std::int32_t* indices,
                         const float* distances, std::int64_t m, std::int64_t topk) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("--dump-answers {}: cannot create the folder ({})", dir, ec.message()));
  const std::string names[2] = {dump_indices_path(dir, case_id, version), dump_distances_path(dir, case_id, version)};
  const std::string suffix = fmt::format(".tmp.{}", ::getpid());
  const std::string tmps[2] = {names[0] + suffix, names[1] + suffix};
  for (const std::string& t : tmps) ::unlink(t.c_str());  // a temporary of a dead process with this pid
  try {
    write_npy(tmps[0], names[0], indices, "<i4", m, topk);
    write_npy(tmps[1], names[1], distances, "<f4", m, topk);
  } catch (...) {
    for (const std::string& t : tmps) ::unlink(t.c_str());
    throw;
  }
  for (int i = 0; i < 2; ++i)
    if (std::rename(tmps[i].c_str(), names[i].c_str()) != 0) {
      const int err = errno;
      for (const std::string& t : tmps) ::unlink(t.c_str());
      throw std::runtime_error(fmt::format("{}: cannot rename {} into place ({})", names[i], tmps[i], std::strerror(err)));
    }
  return names[0];
}

}  // namespace knn
