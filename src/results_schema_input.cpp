// Reading an input of `report` and `compare` (a results file, plain or gzipped, or its journal)
// without hanging and without unbounded memory: opened without blocking (a FIFO with no writer
// never blocks open), refused unless a regular file, capped in size before and while reading
// (kMaxInputBytes, also what a gzip stream inflates to), and a gzip stream must end where the file
// ends. A NUL byte, never part of JSON text, stops the read at once (a file of zeros is not JSON).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "results_schema.hpp"

namespace knn {
namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& what) { throw SchemaError(fmt::format("{}: {}", path, what)); }

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string size_text(std::size_t bytes) {
  return bytes % (std::size_t(1) << 30) == 0 ? fmt::format("{} GiB", bytes >> 30) : fmt::format("{} bytes", bytes);
}

// Closes the descriptor on every way out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void refuse_nul(const std::string& path, const std::string& text, std::size_t from) {
  const auto at = text.find('\0', from);
  if (at != std::string::npos)
    refuse(path, fmt::format("a NUL byte at offset {}{}: not JSON text", at, from == 0 && at == 0 ? " (the file starts with zeros)" : ""));
}

// The gzip members of `raw`, inflated; one member or several back to back (as gzip(1) reads them),
// and nothing after the last.
std::string gunzip(const std::string& path, const std::string& raw, std::size_t max_bytes) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) refuse(path, "read error: zlib cannot start inflating");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&zs};
  std::string out;
  char chunk[1 << 16];
  std::size_t member_start = 0;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = static_cast<uInt>(raw.size());  // at most kMaxInputBytes, within uInt
  for (;;) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof chunk;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const std::size_t got = sizeof chunk - zs.avail_out;
    const std::size_t offset = raw.size() - zs.avail_in;  // bytes of the file consumed so far
    if (out.size() + got > max_bytes)
      refuse(path, fmt::format("inflates to more than {} ({} bytes), the most a results file or journal may hold; refusing it",
                               size_text(max_bytes), max_bytes));
    const std::size_t before = out.size();
    out.append(chunk, got);
    refuse_nul(path, out, before);
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) return out;
      const auto* next = reinterpret_cast<const unsigned char*>(raw.data() + offset);
      if (zs.avail_in >= 2 && next[0] == 0x1f && next[1] == 0x8b) {  // another gzip member
        member_start = offset;
        inflateReset(&zs);
        continue;
      }
      refuse(path, fmt::format("{} bytes of trailing data after the gzip stream, from byte offset {} (the stream ends there); "
                               "not a gzip file as gzip(1) writes it",
                               zs.avail_in, offset));
    }
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
      refuse(path, fmt::format("read error: corrupt gzip data in the member starting at byte offset {}: {}", member_start,
                               zs.msg ? zs.msg : "invalid data"));
    if (rc == Z_MEM_ERROR) refuse(path, "read error: out of memory while inflating");
    if (zs.avail_in == 0 && got == 0)
      refuse(path, fmt::format("read error: the gzip stream is cut short: the file ends at byte {} before the stream does", raw.size()));
  }
}

bool gzipped(const std::string& raw) {
  return raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f && static_cast<unsigned char>(raw[1]) == 0x8b;
}

}  // namespace

std::string read_input_file(const std::string& path, const std::string& expected, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once (and is refused below) instead of waiting.
  Fd in{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (in.fd < 0) {
    const int err = errno;
    struct stat st{};
    if (err == ENOENT) refuse(path, "no such file");
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))  // a socket cannot be opened at all (ENXIO)
      refuse(path, fmt::format("is {}, expected {}", kind_of(st.st_mode), expected));
    refuse(path, fmt::format("cannot open: {}", std::strerror(err)));
  }
  struct stat st{};
  if (::fstat(in.fd, &st) != 0) refuse(path, fmt::format("cannot look at it: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) refuse(path, fmt::format("is {}, expected {}", kind_of(st.st_mode), expected));
  if (std::size_t(st.st_size) > max_bytes)
    refuse(path, fmt::format("{} bytes, over the {} ({} bytes) a results file or journal may hold; refusing to read it", st.st_size,
                             size_text(max_bytes), max_bytes));
  std::string raw;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(in.fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) refuse(path, fmt::format("read error: {}", std::strerror(errno)));
    if (got == 0) break;
    if (raw.size() + std::size_t(got) > max_bytes)  // it grew while being read
      refuse(path, fmt::format("over the {} ({} bytes) a results file or journal may hold; refusing to read it", size_text(max_bytes), max_bytes));
    const std::size_t before = raw.size();
    raw.append(chunk, std::size_t(got));
    if (!gzipped(raw)) refuse_nul(path, raw, before);  // plain text: a file of zeros stops here, at its first chunk
  }
  return gzipped(raw) ? gunzip(path, raw, max_bytes) : raw;
}

}  // namespace knn
