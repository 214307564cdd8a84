// The IDX reader (MNIST's and Fashion-MNIST's format), gzipped (named .gz) or not. An IDX file is a 4-byte
// magic (0x00 0x00, an element type, the number of dimensions), one big-endian uint32 per dimension,
// then the elements, big-endian, row-major. Dimension 0 is the items (rows); the product of the
// others is k (28 × 28 = 784 for an image, 1 for a label).
#include <zlib.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "datafile_detail.hpp"

namespace knn::datafile_detail {
namespace {

constexpr unsigned kIdxUbyte = 0x08, kIdxFloat32 = 0x0D;

const char* idx_type_name(unsigned t) {
  switch (t) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
  }
  return "no IDX type";
}

// An IDX file's bytes: gunzipped when its name ends in ".gz", as they are otherwise. The name
// decides, and the content must agree: a plain file named .gz, or gzip data under another name, is
// refused (zlib's gz* functions would read either silently), as is anything after the gzip stream.
class IdxBytes {
 public:
  explicit IdxBytes(const std::string& path) : path_(path), f_(path), gz_(lower_extension(path) == ".gz") {
    unsigned char magic[2] = {0, 0};
    const std::uint64_t got = f_.read_some(0, magic, 2);
    const bool gzip = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (gz_ && f_.size() == 0) refuse(path, "empty file: expected gzip-compressed IDX data (the name ends in .gz)");
    if (gz_ && !gzip)
      refuse(path, fmt::format("byte 0: 0x{:02x} 0x{:02x} is not gzip's magic 0x1f 0x8b, but the name ends in .gz: expected gzip-compressed IDX data "
                               "(an uncompressed IDX file must not be named .gz)", magic[0], got > 1 ? magic[1] : 0));
    if (!gz_ && gzip)
      refuse(path, "byte 0: gzip's magic 0x1f 0x8b in a file whose name does not end in .gz: expected uncompressed IDX data (name a gzipped one ….gz)");
    if (!gz_) return;
    in_.resize(kReadChunk);
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) refuse(path, "zlib cannot start decompressing (out of memory)");
  }
  ~IdxBytes() {
    if (gz_) inflateEnd(&z_);
  }
  IdxBytes(const IdxBytes&) = delete;
  IdxBytes& operator=(const IdxBytes&) = delete;

  // Up to `bytes` (decompressed) bytes; fewer only at the end of the data. A cut or corrupt gzip
  // stream is refused with the offset (in decompressed bytes) where it broke.
  std::uint64_t read(void* dst, std::uint64_t bytes) {
    const std::uint64_t done = gz_ ? inflate_some(static_cast<unsigned char*>(dst), bytes) : f_.read_some(offset_, dst, bytes);
    offset_ += done;
    return done;
  }

  std::uint64_t offset() const { return offset_; }

  // Passes over up to `bytes` bytes (decompressing them when gzipped); returns how many there were.
  std::uint64_t skip(std::uint64_t bytes) {
    if (!gz_) {
      const std::uint64_t done = std::min(bytes, f_.size() - std::min(f_.size(), offset_));
      offset_ += done;
      return done;
    }
    std::vector<unsigned char> scratch(std::size_t(std::min<std::uint64_t>(bytes, kReadChunk)));
    std::uint64_t done = 0;
    for (std::uint64_t got = 1; done < bytes && got > 0; done += got) got = read(scratch.data(), std::min<std::uint64_t>(bytes - done, scratch.size()));
    return done;
  }

 private:
  std::uint64_t inflate_some(unsigned char* dst, std::uint64_t bytes) {
    std::uint64_t done = 0;
    while (done < bytes && !ended_) {
      if (z_.avail_in == 0) {
        const std::uint64_t got = f_.read_some(at_, in_.data(), in_.size());
        if (got == 0) broken(done, fmt::format("the gzip stream stops at byte {} of {}", at_, f_.size()));
        z_.next_in = in_.data();
        z_.avail_in = unsigned(got);
        at_ += got;
      }
      const std::uint64_t want = std::min<std::uint64_t>(bytes - done, 1u << 30);
      z_.next_out = dst + done;
      z_.avail_out = unsigned(want);
      const int rc = inflate(&z_, Z_NO_FLUSH);
      done += want - z_.avail_out;
      if (rc == Z_STREAM_END) member_end(done);
      else if (rc != Z_OK) broken(done, z_.msg ? z_.msg : zError(rc));
    }
    return done;
  }

  // The end of one gzip member: the file ends here, or another member follows (gzip -c a b > ab);
  // anything else is junk that a reader of the stream alone would silently drop.
  void member_end(std::uint64_t done) {
    const std::uint64_t end = at_ - z_.avail_in;
    z_.avail_in = 0;
    at_ = end;
    if (end == f_.size()) {
      ended_ = true;
      return;
    }
    unsigned char next[2] = {0, 0};
    if (f_.read_some(end, next, 2) == 2 && next[0] == 0x1f && next[1] == 0x8b) {
      inflateReset(&z_);
      return;
    }
    refuse(path_, fmt::format("byte {}: {} bytes after the end of the gzip stream (after {} decompressed bytes), starting 0x{:02x}: "
                              "expected the file to end with the stream (or another gzip member)", end, f_.size() - end, offset_ + done, next[0]));
  }

  [[noreturn]] void broken(std::uint64_t done, const std::string& why) const {
    refuse(path_, fmt::format("gzip data broken after {} decompressed bytes ({}): the file is truncated or corrupt", offset_ + done, why));
  }

  std::string path_;
  File f_;
  bool gz_;
  z_stream z_{};
  std::vector<unsigned char> in_;
  std::uint64_t at_ = 0;      // the next compressed byte to read from the file
  std::uint64_t offset_ = 0;  // decompressed bytes handed out
  bool ended_ = false;
};

std::uint32_t be32(const unsigned char* b) { return std::uint32_t(b[0]) << 24 | std::uint32_t(b[1]) << 16 | std::uint32_t(b[2]) << 8 | b[3]; }

// Reads and checks the magic and the dimensions; leaves `in` at the first element.
DataFileInfo read_header(const std::string& path, IdxBytes& in, DataFileInfo info) {
  unsigned char magic[4];
  const std::uint64_t got = in.read(magic, 4);
  if (got == 0) refuse(path, "empty file: expected an IDX file (magic 0x00 0x00, a type byte, a dimension count)");
  if (got < 4) refuse(path, fmt::format("short file: {} bytes: expected at least the 4-byte IDX magic", got));
  if (magic[0] != 0 || magic[1] != 0)
    refuse(path, fmt::format("byte 0: magic 0x{:02x} 0x{:02x}: not an IDX file: expected 0x00 0x00, a type byte and a dimension count", magic[0], magic[1]));
  const unsigned type = magic[2], dims = magic[3];
  if (type != kIdxUbyte && type != kIdxFloat32)
    refuse(path, fmt::format("byte 2: element type 0x{:02x} ({}): expected 0x08 (unsigned byte) or 0x0D (float32)", type, idx_type_name(type)));
  if (dims < 1 || dims > 8) refuse(path, fmt::format("byte 3: {} dimensions: expected 1 to 8", dims));
  std::array<unsigned char, 32> sizes{};
  const std::uint64_t have = in.read(sizes.data(), 4 * dims);
  if (have < 4 * dims) refuse(path, fmt::format("short file: {} bytes: expected the {}-byte header of {} dimensions", 4 + have, 4 + 4 * dims, dims));
  info.rows = be32(sizes.data());
  if (info.rows == 0) refuse(path, "byte 4: 0 items: expected at least one");
  info.cols = 1;
  for (unsigned d = 1; d < dims; ++d) {
    const std::uint32_t s = be32(sizes.data() + 4 * d);
    if (s == 0) refuse(path, fmt::format("byte {}: dimension {} is 0: expected items of at least one value", 4 + 4 * d, d));
    info.cols *= s;
  }
  info.idx_type = type;
  info.data_offset = 4 + 4 * std::uint64_t(dims);
  return info;
}

std::uint64_t element_bytes(unsigned type) { return type == kIdxFloat32 ? 4 : 1; }

}  // namespace

namespace {
// The data after the header (`have` bytes) against the header's dimensions.
void expect_data_bytes(const std::string& path, const DataFileInfo& info, std::uint64_t have) {
  const unsigned __int128 need = (unsigned __int128)info.rows * info.cols * element_bytes(info.idx_type);
  const std::string shape = fmt::format("{} items of {} {} values", info.rows, info.cols, idx_type_name(info.idx_type));
  if (have < need)
    refuse(path, fmt::format("short file: {} bytes of data after the {}-byte header: expected {} ({}); the file is truncated", have,
                             info.data_offset, std::uint64_t(need), shape));
  if (have > need)
    refuse(path, fmt::format("{} bytes of data after the {}-byte header: expected {} ({}): the dimensions do not match the data", have,
                             info.data_offset, std::uint64_t(need), shape));
}
}  // namespace

DataFileInfo inspect_idx(const std::string& path, DataFileInfo info) {
  IdxBytes in(path);
  info = read_header(path, in, info);
  // The data length is known only once decompressed: read it through, allocating one chunk.
  expect_data_bytes(path, info, in.skip(~std::uint64_t(0)));
  return info;
}

namespace {
// Items in increasing ranges, in one pass over the (decompressed) bytes; finish() reads on to the
// end and checks the data's length as inspect_idx does.
class IdxRows final : public RowReader {
 public:
  explicit IdxRows(const DataFileInfo& info) : info_(info), in_(info.path), size_(element_bytes(info.idx_type)), chunk_(kReadChunk) {
    const DataFileInfo now = read_header(info.path, in_, info);
    if (now.rows != info.rows || now.cols != info.cols || now.idx_type != info.idx_type)
      refuse(info.path, fmt::format("{} items of {} values, was {} of {} when the matrix was loaded: the file changed since", now.rows, now.cols,
                                    info.rows, info.cols));
  }

  void read(std::uint64_t first, std::uint64_t rows, float* out) override {
    const std::uint64_t start = first * info_.cols, count = rows * info_.cols;
    if (in_.skip((start - next_) * size_) != (start - next_) * size_) short_read();
    next_ = start;
    for (std::uint64_t i0 = 0; i0 < count;) {
      const std::uint64_t want = std::min<std::uint64_t>(count - i0, kReadChunk / size_);
      if (in_.read(chunk_.data(), want * size_) != want * size_) short_read();
      for (std::uint64_t j = 0; j < want; ++j) out[i0 + j] = value(chunk_.data() + j * size_, start + i0 + j);
      i0 += want;
    }
    next_ = start + count;
  }
  void finish() override { expect_data_bytes(info_.path, info_, next_ * size_ + in_.skip(~std::uint64_t(0))); }

 private:
  [[noreturn]] void short_read() const {
    refuse(info_.path, fmt::format("short read at decompressed byte {}: the file changed while it was read", in_.offset()));
  }
  // Element `at` (of the whole data) from its bytes `b`.
  float value(const unsigned char* b, std::uint64_t at) const {
    if (info_.idx_type == kIdxUbyte) return float(b[0]);
    const std::uint32_t bits = be32(b);
    float v;
    std::memcpy(&v, &bits, 4);
    if (!std::isfinite(v))
      refuse(info_.path, fmt::format("{} at decompressed byte {} (item {}, value {}): expected finite float32 values", non_finite_name(v),
                                     info_.data_offset + 4 * at, at / info_.cols, at % info_.cols));
    return v;
  }

  DataFileInfo info_;
  IdxBytes in_;
  std::uint64_t size_;
  std::vector<unsigned char> chunk_;
  std::uint64_t next_ = 0;  // the element the bytes are at
};
}  // namespace

std::unique_ptr<RowReader> idx_rows(const DataFileInfo& info) { return std::make_unique<IdxRows>(info); }

}  // namespace knn::datafile_detail
