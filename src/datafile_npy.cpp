// The .npy reader: a strict parser of NumPy's header dict and the shape it declares.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>
#include <system_error>
#include <vector>

#include "datafile_detail.hpp"

namespace knn::datafile_detail {
namespace {
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

}  // namespace

DataFileInfo inspect_npy(const std::string& path, const File& f, DataFileInfo info, bool int32) {
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

  if (int32 && h.descr != "<i4") refuse(path, fmt::format("dtype '{}': expected little-endian int32 '<i4' (neighbour indices)", shown(h.descr, 40)));
  if (h.descr_structured) refuse(path, "dtype: a structured dtype: expected little-endian float32 '<f4'");
  if (h.descr == ">f4") refuse(path, "dtype '>f4' is big-endian float32: expected little-endian float32 '<f4'");
  if (h.descr != "<f4" && !int32) refuse(path, fmt::format("dtype '{}': expected little-endian float32 '<f4'", shown(h.descr, 40)));
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
}  // namespace knn::datafile_detail
