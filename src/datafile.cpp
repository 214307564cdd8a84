#include "datafile.hpp"

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
#include <string_view>
#include <system_error>
#include <vector>

#include "core/errors.hpp"

namespace knn {

// The binary formats are little-endian float32; reading them straight into floats needs a
// little-endian host (x86-64, AArch64).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "data files are read as little-endian float32");

namespace {

constexpr std::uint64_t kMaxNpyHeader = 1u << 16;   // NumPy itself reads at most 10000 bytes by default
constexpr std::size_t kMaxCsvLine = 16u << 20;      // a row of 16 MiB is far past any k we run
constexpr std::size_t kReadChunk = 1u << 20;

// Paths and tokens in messages: control characters escaped, so an error stays one line.
std::string shown(std::string_view raw, std::size_t limit = 200) {
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

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
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

std::uint32_t le32(const unsigned char* b) { return std::uint32_t(b[0]) | std::uint32_t(b[1]) << 8 | std::uint32_t(b[2]) << 16 | std::uint32_t(b[3]) << 24; }

const char* non_finite_name(float x) { return std::isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf"; }

std::size_t first_non_finite(const float* v, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    if (!std::isfinite(v[i])) return i;
  return count;
}

std::string lower_extension(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// ---------------------------------------------------------------- .npy
// The header is a Python dict literal, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
// No library here reads it, so this is a strict reader of exactly that grammar: string keys,
// and values that are strings, True/False or tuples of integers.
struct NpyHeader {
  std::string descr;
  bool descr_structured = false;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
  bool has_descr = false, has_fortran = false, has_shape = false;
};

class NpyHeaderReader {
 public:
  NpyHeaderReader(const std::string& path, std::string_view text, std::uint64_t base) : path_(path), s_(text), base_(base) {}

  NpyHeader parse() {
    NpyHeader h;
    space();
    expect('{');
    for (;;) {
      space();
      if (peek() == '}') break;
      const std::uint64_t key_at = i_;
      const std::string key = string();
      space();
      expect(':');
      space();
      if (key == "descr") {
        if (peek() == '[') {
          h.descr_structured = true;
          skip_nested();
        } else {
          h.descr = string();
        }
        h.has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        h.has_fortran = true;
      } else if (key == "shape") {
        h.shape = tuple();
        h.has_shape = true;
      } else {
        fail_at(key_at, fmt::format("header key '{}': expected only 'descr', 'fortran_order' and 'shape'", shown(key, 40)));
      }
      space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      space();
      if (peek() != '}') fail("expected ',' or '}' in the header dict");
    }
    ++i_;
    space();
    if (i_ != s_.size()) fail("text after the header dict: expected only spaces and a newline");
    if (!h.has_descr || !h.has_fortran || !h.has_shape) fail_at(0, "the header lacks 'descr', 'fortran_order' or 'shape': expected all three");
    return h;
  }

 private:
  [[noreturn]] void fail_at(std::uint64_t at, const std::string& what) const {
    refuse(path_, fmt::format(".npy header at byte {}: {}", base_ + at, what));
  }
  [[noreturn]] void fail(const std::string& what) const {
    fail_at(i_, i_ < s_.size() ? fmt::format("'{}': {}", shown(s_.substr(i_, 1)), what) : "the header ends early: " + what);
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++i_;
  }
  std::string string() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const std::size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') fail("escapes are not supported in header strings");
      ++i_;
    }
    if (i_ >= s_.size()) fail("unterminated string");
    return std::string(s_.substr(start, i_++ - start));
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  std::vector<std::uint64_t> tuple() {
    expect('(');
    std::vector<std::uint64_t> out;
    for (;;) {
      space();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in the shape");
      const std::uint64_t at = i_;
      std::uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (std::uint64_t(1) << 62) / 10) fail_at(at, "a shape entry of more than 2^62: expected a size that fits in memory");
        v = v * 10 + std::uint64_t(peek() - '0');
        ++i_;
      }
      if (peek() == 'L') ++i_;  // Python 2 longs
      out.push_back(v);
      if (out.size() > 32) fail("more than 32 dimensions in the shape");
      space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      space();
      if (peek() != ')') fail("expected ',' or ')' in the shape");
    }
    ++i_;
    return out;
  }
  // A structured dtype is a list of tuples: skipped only to name it in the refusal.
  void skip_nested() {
    int depth = 0;
    do {
      if (i_ >= s_.size()) fail("unterminated list");
      if (s_[i_] == '[' || s_[i_] == '(') ++depth;
      if (s_[i_] == ']' || s_[i_] == ')') --depth;
      ++i_;
    } while (depth > 0);
  }

  const std::string& path_;
  std::string_view s_;
  std::uint64_t base_;
  std::size_t i_ = 0;
};

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

DataFileInfo inspect_npy(const std::string& path, const File& f, DataFileInfo info) {
  const std::uint64_t size = f.size();
  unsigned char pre[12] = {};
  const std::uint64_t got = f.read_some(0, pre, sizeof pre);
  if (got < 10) refuse(path, fmt::format("short file: {} bytes: expected at least the 10-byte .npy preamble", size));
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0) refuse(path, "byte 0: not a .npy file: expected the magic \\x93NUMPY");
  const int major = pre[6], minor = pre[7];
  std::uint64_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = std::uint64_t(pre[8]) | std::uint64_t(pre[9]) << 8;
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (got < 12) refuse(path, fmt::format("short file: {} bytes: expected at least the 12-byte .npy {}.{} preamble", size, major, minor));
    header_len = le32(pre + 8);
    header_at = 12;
  } else {
    refuse(path, fmt::format("byte 6: .npy format version {}.{}: expected 1.0, 2.0 or 3.0", major, minor));
  }
  if (header_len > kMaxNpyHeader)
    refuse(path, fmt::format("byte 8: a header length of {} bytes: expected at most {}", header_len, kMaxNpyHeader));
  if (header_at + header_len > size)
    refuse(path, fmt::format("short file: the header length at byte 8 says {} bytes of header from offset {}, file has {}", header_len, header_at,
                             size - header_at));
  std::string text(std::size_t(header_len), '\0');
  f.read_at(header_at, text.data(), header_len);
  const NpyHeader h = NpyHeaderReader(path, text, header_at).parse();

  if (h.descr_structured) refuse(path, "dtype: a structured dtype: expected little-endian float32 '<f4'");
  if (h.descr == ">f4") refuse(path, "dtype '>f4' is big-endian float32: expected little-endian float32 '<f4'");
  if (h.descr != "<f4") refuse(path, fmt::format("dtype '{}': expected little-endian float32 '<f4'", shown(h.descr, 40)));
  if (h.fortran_order) refuse(path, "fortran_order True (column-major): expected C order, fortran_order False");
  if (h.shape.size() != 2)
    refuse(path, fmt::format("{}-D shape {}: expected a 2-D shape (rows, k)", h.shape.size(), shape_text(h.shape)));

  info.rows = h.shape[0];
  info.cols = h.shape[1];
  info.data_offset = header_at + header_len;
  // 128-bit: a header may claim any shape; nothing is allocated until the product matches the file.
  const unsigned __int128 need = (unsigned __int128)info.rows * info.cols * 4;
  const std::uint64_t have = size - info.data_offset;
  if (need > have) {
    const std::string expected = need > ~std::uint64_t(0) ? std::string("more than 2^64") : std::to_string(std::uint64_t(need));
    refuse(path, fmt::format("short file: expected {} bytes of data after the header at offset {}, file has {} (shape {})", expected,
                             info.data_offset, have, shape_text(h.shape)));
  }
  if (need < have)
    refuse(path, fmt::format("{} bytes of data after the header at offset {}: expected {} for shape {}", have, info.data_offset,
                             std::uint64_t(need), shape_text(h.shape)));
  return info;
}

// ---------------------------------------------------------------- .fvecs
std::int32_t fvecs_dim_at(const File& f, std::uint64_t offset) {
  unsigned char b[4];
  f.read_at(offset, b, 4);
  return std::int32_t(le32(b));
}

DataFileInfo inspect_fvecs(const std::string& path, const File& f, DataFileInfo info) {
  const std::uint64_t size = f.size();
  if (size == 0) refuse(path, "empty file: expected .fvecs vectors (an int32 dimension, then that many float32)");
  if (size < 4) refuse(path, fmt::format("short file: {} bytes: expected at least the 4-byte dimension of vector 0", size));
  const std::int32_t dim = fvecs_dim_at(f, 0);
  if (dim < 1) refuse(path, fmt::format("vector 0 at byte 0 has dimension {}: expected a dimension ≥ 1", dim));
  const std::uint64_t record = 4 + 4 * std::uint64_t(dim);
  if (size % record != 0) {
    // Find out why: a vector of another dimension, or a cut last vector. Error path only.
    for (std::uint64_t r = 0, at = 0; at < size; ++r, at += record) {
      if (at + 4 > size || at + record > size)
        refuse(path, fmt::format("short file: {} bytes is not a whole number of {}-byte vectors of dimension {}: vector {} at byte {} is cut after {} bytes",
                                 size, record, dim, r, at, size - at));
      const std::int32_t d = fvecs_dim_at(f, at);
      if (d != dim) refuse(path, fmt::format("vector {} at byte {} has dimension {}, expected {}", r, at, d, dim));
    }
  }
  info.rows = size / record;
  info.cols = std::uint64_t(dim);
  return info;
}

void read_fvecs(const DataFileInfo& info, const File& f, float* out) {
  const std::uint64_t record = 4 + 4 * info.cols;
  const std::uint64_t per_chunk = std::max<std::uint64_t>(1, kReadChunk / record);
  std::vector<unsigned char> buf(std::size_t(per_chunk * record));
  for (std::uint64_t r0 = 0; r0 < info.rows; r0 += per_chunk) {
    const std::uint64_t count = std::min(per_chunk, info.rows - r0);
    f.read_at(r0 * record, buf.data(), count * record);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t row = r0 + i, at = row * record;
      const unsigned char* rec = buf.data() + i * record;
      const std::int32_t d = std::int32_t(le32(rec));
      if (d < 1 || std::uint64_t(d) != info.cols)
        refuse(info.path, fmt::format("vector {} at byte {} has dimension {}, expected {}", row, at, d, info.cols));
      float* dst = out + row * info.cols;
      std::memcpy(dst, rec + 4, std::size_t(info.cols) * 4);
      const std::size_t bad = first_non_finite(dst, std::size_t(info.cols));
      if (bad < info.cols)
        refuse(info.path, fmt::format("{} at byte {} (vector {}, coordinate {}): expected finite float32 values", non_finite_name(dst[bad]),
                                      at + 4 + 4 * bad, row, bad));
    }
  }
}

// ---------------------------------------------------------------- raw float32
DataFileInfo inspect_raw(const std::string& path, const File& f, DataFileInfo info, std::uint64_t cols) {
  if (cols == 0) refuse(path, "a raw float32 file needs the row length k from the case");
  const std::uint64_t row_bytes = 4 * cols;
  if (f.size() % row_bytes != 0)
    refuse(path, fmt::format("short file: {} bytes is not a whole number of {}-byte rows (k = {} float32): the last row, row {} at byte {}, is cut after {} bytes",
                             f.size(), row_bytes, cols, f.size() / row_bytes, f.size() / row_bytes * row_bytes, f.size() % row_bytes));
  info.rows = f.size() / row_bytes;
  info.cols = cols;
  return info;
}

void read_dense(const DataFileInfo& info, const File& f, float* out) {
  const std::uint64_t count = info.rows * info.cols;
  f.read_at(info.data_offset, out, count * 4);
  const std::size_t bad = first_non_finite(out, std::size_t(count));
  if (bad < count)
    refuse(info.path, fmt::format("{} at byte {} (row {}, coordinate {}): expected finite float32 values", non_finite_name(out[bad]),
                                  info.data_offset + 4 * std::uint64_t(bad), bad / info.cols, bad % info.cols));
}

// ---------------------------------------------------------------- CSV
// Lines of a file, read in chunks; no line may exceed kMaxCsvLine.
class LineReader {
 public:
  LineReader(const std::string& path, const File& f) : path_(path), f_(f) {}

  // The next line without its "\n" or "\r\n"; false at the end of the file.
  bool next(std::string_view& line) {
    for (;;) {
      const auto nl = buf_.find('\n', pos_);
      if (nl != std::string::npos) {
        line = std::string_view(buf_).substr(pos_, nl - pos_);
        pos_ = nl + 1;
        break;
      }
      if (buf_.size() - pos_ > kMaxCsvLine) refuse(path_, fmt::format("line {} is longer than {} bytes: expected one row per line", line_ + 1, kMaxCsvLine));
      if (eof_) {
        if (pos_ >= buf_.size()) return false;
        line = std::string_view(buf_).substr(pos_);
        pos_ = buf_.size();
        break;
      }
      buf_.erase(0, pos_);
      pos_ = 0;
      const std::size_t old = buf_.size();
      buf_.resize(old + kReadChunk);
      const std::uint64_t got = f_.read_some(offset_, buf_.data() + old, kReadChunk);
      buf_.resize(old + std::size_t(got));
      offset_ += got;
      eof_ = got == 0;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_;
    return true;
  }
  std::uint64_t line_number() const { return line_; }

 private:
  const std::string& path_;
  const File& f_;
  std::string buf_;
  std::size_t pos_ = 0;
  std::uint64_t offset_ = 0, line_ = 0;
  bool eof_ = false;
};

bool blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; });
}

// One comma-separated field: the token without surrounding spaces and its 1-based column.
struct Field {
  std::string_view token;
  std::size_t column;
};

// Calls fn(field) for each field of `line`; returns the count.
template <class Fn>
std::uint64_t for_each_field(std::string_view line, Fn&& fn) {
  std::uint64_t count = 0;
  std::size_t start = 0;
  for (;;) {
    const auto comma = line.find(',', start);
    std::string_view raw = line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t lead = 0;
    while (lead < raw.size() && (raw[lead] == ' ' || raw[lead] == '\t')) ++lead;
    std::size_t end = raw.size();
    while (end > lead && (raw[end - 1] == ' ' || raw[end - 1] == '\t')) --end;
    fn(Field{raw.substr(lead, end - lead), start + lead + 1});
    ++count;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return count;
}

std::uint64_t count_fields(std::string_view line) { return std::uint64_t(std::count(line.begin(), line.end(), ',')) + 1; }

enum class Parsed { ok, not_a_number, out_of_range };

// For a decimal number that from_chars read whole, [-]digits[.digits][e[+-]digits] and not zero:
// whether it is below 1, from the decimal exponent of its first non-zero digit.
bool below_one(std::string_view t) {
  if (t[0] == '-') t.remove_prefix(1);
  const std::size_t e = std::min(t.find_first_of("eE"), t.size());
  const std::string_view mantissa = t.substr(0, e);
  const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
  const std::size_t lead = mantissa.find_first_of("123456789");
  if (lead == std::string_view::npos) return true;
  const std::int64_t lead_exp = lead < point ? std::int64_t(point - lead) - 1 : -std::int64_t(lead - point);
  std::int64_t exp = 0;
  std::size_t i = e + 1;
  const bool negative = i < t.size() && t[i] == '-';
  if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
  for (; i < t.size(); ++i) exp = std::min<std::int64_t>(exp * 10 + (t[i] - '0'), std::int64_t(1) << 40);
  return lead_exp + (negative ? -exp : exp) < 0;
}

// The whole token must be one number (no partial parses: "1.5abc" is refused). NaN and Inf
// parse here and are refused by the caller with their position.
Parsed parse_float(std::string_view token, float& out) {
  if (token.size() > 1 && token[0] == '+' && token[1] != '-' && token[1] != '+') token.remove_prefix(1);
  if (token.empty()) return Parsed::not_a_number;
  const char* first = token.data();
  const char* last = first + token.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  if (ec == std::errc() && ptr == last) return Parsed::ok;
  if (ec != std::errc::result_out_of_range || ptr != last) return Parsed::not_a_number;
  // Out of float range: below the smallest subnormal rounds to zero, which is fine; beyond
  // FLT_MAX would be an infinity, which is not. Out of double's range too, tiny is still zero.
  double d = 0;
  auto [dptr, dec] = std::from_chars(first, last, d);
  if (dec == std::errc::result_out_of_range && dptr == last && below_one(token)) d = token[0] == '-' ? -0.0 : 0.0;
  else if (dec != std::errc() || dptr != last || std::fabs(d) > double(FLT_MAX)) return Parsed::out_of_range;
  out = float(d);
  return Parsed::ok;
}

bool is_header(std::string_view line) {
  bool any_number = false;
  for_each_field(line, [&](const Field& f) {
    float v;
    any_number = any_number || parse_float(f.token, v) != Parsed::not_a_number;
  });
  return !any_number;
}

std::string csv_at(const std::string& path, std::uint64_t line, std::size_t column) { return fmt::format("{}:{}:{}", shown(path), line, column); }

DataFileInfo inspect_csv(const std::string& path, const File& f, DataFileInfo info) {
  LineReader lines(path, f);
  std::string_view line;
  std::uint64_t rows = 0, cols = 0, first_row_line = 0, blank_line = 0;
  bool header = false;
  while (lines.next(line)) {
    const std::uint64_t no = lines.line_number();
    if (no == 1 && !blank(line) && is_header(line)) {
      header = true;
      continue;
    }
    if (blank(line)) {
      if (blank_line == 0) blank_line = no;
      continue;
    }
    if (blank_line != 0)
      throw ConfigError(fmt::format("{}: line {} is blank, then line {} holds a row: expected one row per line, blank lines only at the end",
                                    csv_at(path, blank_line, 1), blank_line, no));
    const std::uint64_t n = count_fields(line);
    if (rows == 0) {
      cols = n;
      first_row_line = no;
    } else if (n != cols) {
      throw ConfigError(fmt::format("{}: line {} has {} fields: expected {}, as on line {}", csv_at(path, no, 1), no, n, cols, first_row_line));
    }
    ++rows;
  }
  info.rows = rows;
  info.cols = cols;
  info.csv_first_row_line = rows ? first_row_line : header ? 2 : 1;  // read skips the header even with no rows
  return info;
}

void read_csv(const DataFileInfo& info, const File& f, float* out) {
  LineReader lines(info.path, f);
  std::string_view line;
  std::uint64_t row = 0;
  while (lines.next(line)) {
    const std::uint64_t no = lines.line_number();
    if (no < info.csv_first_row_line || blank(line)) continue;
    if (row >= info.rows) refuse(info.path, fmt::format("line {}: more rows than the {} seen before: the file changed since it was inspected", no, info.rows));
    std::uint64_t coord = 0;
    const std::uint64_t n = for_each_field(line, [&](const Field& fld) {
      if (coord >= info.cols) return;
      float v = 0;
      const Parsed p = parse_float(fld.token, v);
      const std::string where = csv_at(info.path, no, fld.column);
      const std::string tok = shown(fld.token, 40);
      if (p == Parsed::not_a_number)
        throw ConfigError(fmt::format("{}: \"{}\" (row {}, coordinate {}): expected a number", where, tok, row, coord));
      if (p == Parsed::out_of_range)
        throw ConfigError(fmt::format("{}: \"{}\" (row {}, coordinate {}) is beyond float32 range: expected finite float32 values", where, tok, row, coord));
      if (!std::isfinite(v))
        throw ConfigError(fmt::format("{}: \"{}\" (row {}, coordinate {}) is {}: expected finite float32 values", where, tok, row, coord, non_finite_name(v)));
      out[row * info.cols + coord] = v;
      ++coord;
    });
    if (n != info.cols)
      throw ConfigError(fmt::format("{}: line {} has {} fields: expected {}", csv_at(info.path, no, 1), no, n, info.cols));
    ++row;
  }
  if (row != info.rows) refuse(info.path, fmt::format("{} rows: expected the {} seen before: the file changed since it was inspected", row, info.rows));
}

DataFileInfo inspect_open(const std::string& path, const File& f, std::uint64_t raw_cols) {
  DataFileInfo info;
  info.path = path;
  info.format = data_format_of(path);
  info.file_bytes = f.size();
  switch (info.format) {
    case DataFormat::npy: return inspect_npy(path, f, info);
    case DataFormat::fvecs: return inspect_fvecs(path, f, info);
    case DataFormat::raw_f32: return inspect_raw(path, f, info, raw_cols);
    case DataFormat::csv: return inspect_csv(path, f, info);
  }
  return info;
}

}  // namespace

const char* to_string(DataFormat f) {
  switch (f) {
    case DataFormat::npy: return "npy";
    case DataFormat::fvecs: return "fvecs";
    case DataFormat::raw_f32: return "raw float32";
    case DataFormat::csv: return "csv";
  }
  return "?";
}

DataFormat data_format_of(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == ".npy") return DataFormat::npy;
  if (ext == ".fvecs") return DataFormat::fvecs;
  if (ext == ".bin" || ext == ".f32") return DataFormat::raw_f32;
  if (ext == ".csv") return DataFormat::csv;
  refuse(path, fmt::format("{}: expected one of .npy, .fvecs, .bin, .f32 (raw little-endian float32), .csv",
                           ext.empty() ? std::string("no extension") : fmt::format("unknown extension \"{}\"", shown(ext, 20))));
}

DataFileInfo inspect_data_file(const std::string& path, std::uint64_t raw_cols) {
  data_format_of(path);  // refuse an unknown extension before touching the file
  const File f(path);
  return inspect_open(path, f, raw_cols);
}

void expect_shape(const DataFileInfo& info, std::uint64_t rows, const char* rows_name, std::uint64_t cols) {
  if (info.rows != rows || info.cols != cols)
    refuse(info.path, fmt::format("{} rows of {} floats: expected {} = {} rows of k = {}", info.rows, info.cols, rows_name, rows, cols));
}

void read_data_file(const DataFileInfo& info, float* out) {
  const File f(info.path);
  if (f.size() != info.file_bytes)
    refuse(info.path, fmt::format("{} bytes, was {} when the matrix was loaded: the file changed since", f.size(), info.file_bytes));
  if (info.format == DataFormat::csv) {  // structure is checked again while reading
    read_csv(info, f, out);
    return;
  }
  const DataFileInfo now = inspect_open(info.path, f, info.cols);
  if (now.rows != info.rows || now.cols != info.cols || now.data_offset != info.data_offset)
    refuse(info.path, fmt::format("{} rows of {} floats, was {} of {} when the matrix was loaded: the file changed since", now.rows, now.cols,
                                  info.rows, info.cols));
  if (info.format == DataFormat::fvecs) read_fvecs(info, f, out);
  else read_dense(info, f, out);
}

}  // namespace knn
