#pragma once
// What the data-file readers share (src/datafile*.cpp): the checked file handle, message helpers
// and the per-format entry points. Internal to the harness's data-file reader; see datafile.hpp.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>
#include "core/errors.hpp"
#include "datafile.hpp"

namespace knn::datafile_detail {

inline constexpr std::uint64_t kMaxNpyHeader = 1u << 16;   // NumPy itself reads at most 10000 bytes by default
inline constexpr std::size_t kMaxCsvLine = 16u << 20;      // a row of 16 MiB is far past any k we run
inline constexpr std::size_t kReadChunk = 1u << 20;

// Paths and tokens in messages: control characters escaped, so an error stays one line.
inline std::string shown(std::string_view raw, std::size_t limit = 200) {
  std::string s;
  for (unsigned char ch : raw) {
    if (s.size() > limit) {
      s += "...";
      break;
    }
    if (ch < 0x20 || ch == 0x7f) s += fmt::format("\\x{:02x}", ch);
    else s += char(ch);
  }
  return s;
}

[[noreturn]] inline void refuse(const std::string& path, const std::string& what) {
  throw ConfigError(fmt::format("{}: {}", shown(path), what));
}

// A read-only file descriptor on a regular file. O_NONBLOCK keeps open() from waiting on a FIFO,
// which fstat then refuses.
class File {
 public:
  explicit File(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      refuse(path, err == ENOENT ? std::string("no such file: expected a data file")
                                 : fmt::format("cannot open ({}): expected a readable data file", std::strerror(err)));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      fd_ = -1;
      refuse(path, "not a regular file: expected a data file");
    }
    size_ = std::uint64_t(st.st_size);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  std::uint64_t size() const { return size_; }

  // Reads up to `bytes` at `offset`; returns how many arrived (fewer only at the end of the file).
  std::uint64_t read_some(std::uint64_t offset, void* dst, std::uint64_t bytes) const {
    auto* p = static_cast<char*>(dst);
    std::uint64_t done = 0;
    while (done < bytes) {
      const std::size_t want = std::size_t(std::min<std::uint64_t>(bytes - done, 1u << 30));
      const ssize_t got = ::pread(fd_, p + done, want, off_t(offset + done));
      if (got < 0) {
        if (errno == EINTR) continue;
        refuse(path_, fmt::format("read error at byte {} ({})", offset + done, std::strerror(errno)));
      }
      if (got == 0) break;
      done += std::uint64_t(got);
    }
    return done;
  }

  // Reads exactly `bytes`: the sizes were checked, so a short read means the file shrank meanwhile.
  void read_at(std::uint64_t offset, void* dst, std::uint64_t bytes) const {
    const std::uint64_t got = read_some(offset, dst, bytes);
    if (got != bytes)
      refuse(path_, fmt::format("short read at byte {}: {} of {} bytes: the file changed while it was read", offset + got, got, bytes));
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

inline std::uint32_t le32(const unsigned char* b) { return std::uint32_t(b[0]) | std::uint32_t(b[1]) << 8 | std::uint32_t(b[2]) << 16 | std::uint32_t(b[3]) << 24; }

inline const char* non_finite_name(float x) { return std::isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf"; }

inline std::size_t first_non_finite(const float* v, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    if (!std::isfinite(v[i])) return i;
  return count;
}

inline std::string lower_extension(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// The one refusal of a ground truth whose shape does not serve the case, for every format that holds one.
inline void expect_truth_shape(const std::string& path, std::uint64_t rows, std::uint64_t cols, std::uint64_t m, int topk) {
  if (rows != m || cols < std::uint64_t(topk))
    refuse(path, fmt::format("{} rows of {} neighbour indices: expected m = {} rows of at least topk = {}", rows, cols, m, topk));
}

// The first topk of `cols` neighbour indices per row of `all` (m rows), each checked to be in [0, n);
// an index out of range is named with the value the file holds (T: the file's integer type, read unconverted).
template <class T>
void first_columns(const std::string& path, const std::vector<T>& all, std::uint64_t cols, std::uint64_t m, std::uint64_t n, int topk,
                   std::vector<std::int32_t>& out) {
  out.resize(m * std::uint64_t(topk));
  for (std::uint64_t q = 0; q < m; ++q)
    for (int j = 0; j < topk; ++j) {
      const T i = all[q * cols + std::uint64_t(j)];
      bool negative = false;
      if constexpr (std::is_signed_v<T>) negative = i < 0;
      if (negative || std::uint64_t(i) >= n) refuse(path, fmt::format("row {} column {}: index {}: expected an index in [0, {})", q, j, i, n));
      out[q * std::uint64_t(topk) + std::uint64_t(j)] = std::int32_t(i);
    }
}

// Rows of one data file read in increasing order, a range at a time (datafile_rows.cpp): each
// format's reader keeps its place (a CSV line, a gzip stream) between ranges, so a stream of pieces
// reads the file once. read() checks every value it stores as the whole read does; rows it passes
// over are checked for their structure only (a CSV line's field count, an .fvecs dimension where
// read); finish() checks what follows the last row (more rows, trailing or missing data).
class RowReader {
 public:
  virtual ~RowReader() = default;
  virtual void read(std::uint64_t first, std::uint64_t count, float* out) = 0;  // first ≥ the end of the last range
  virtual void finish() {}
};

// The readers of each format (datafile_npy.cpp, datafile_csv.cpp, datafile.cpp).
DataFileInfo inspect_open(const std::string& path, const File& f, std::uint64_t raw_cols);  // any format but HDF5
DataFileInfo inspect_npy(const std::string& path, const File& f, DataFileInfo info, bool int32 = false);  // int32: '<i4', else '<f4'
bool read_hdf5_neighbors(const std::string& path, std::uint64_t m, std::uint64_t n, int topk, std::vector<std::int32_t>& out);
bool inspect_hdf5_neighbors(const std::string& path, std::uint64_t m, int topk);  // the shape only; false: no "neighbors"
DataFileInfo inspect_csv(const std::string& path, const File& f, DataFileInfo info);
std::unique_ptr<RowReader> csv_rows(const DataFileInfo& info);  // opens the file; its size was checked against info
// " (read as CSV, expected …; line 1, which holds no number, was taken as a header)" when it was, else "".
std::string csv_header_note(const DataFileInfo& info);
DataFileInfo inspect_idx(const std::string& path, DataFileInfo info);  // datafile_idx.cpp
std::unique_ptr<RowReader> idx_rows(const DataFileInfo& info);          // checks the header again
DataFileInfo inspect_hdf5(DataFileInfo info);                           // datafile_hdf5.cpp
std::unique_ptr<RowReader> hdf5_rows(const DataFileInfo& info);         // checks the shape and size again

}  // namespace knn::datafile_detail
