// The IDX reader (MNIST's and Fashion-MNIST's format), gzipped or not. An IDX file is a 4-byte
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

// zlib's gz* functions read a plain file as it is, so one reader serves .gz and uncompressed files.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    errno = 0;
    g_ = gzopen(path.c_str(), "rb");
    if (!g_) refuse(path, fmt::format("cannot open ({}): expected a readable IDX file", errno ? std::strerror(errno) : "out of memory"));
    gzbuffer(g_, 1u << 18);
  }
  ~GzReader() { gzclose(g_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Up to `bytes` decompressed bytes; fewer only at the end of the data. A cut or corrupt gzip
  // stream is refused with the offset (in decompressed bytes) where it broke.
  std::uint64_t read(void* dst, std::uint64_t bytes) {
    auto* p = static_cast<unsigned char*>(dst);
    std::uint64_t done = 0;
    while (done < bytes) {
      const int got = gzread(g_, p + done, unsigned(std::min<std::uint64_t>(bytes - done, 1u << 30)));
      if (got <= 0) {
        int err = Z_OK;
        const char* msg = gzerror(g_, &err);
        if (got < 0 || err != Z_OK)
          refuse(path_, fmt::format("gzip data broken after {} decompressed bytes ({}): the file is truncated or corrupt", offset_ + done, msg));
        break;
      }
      done += std::uint64_t(got);
    }
    offset_ += done;
    return done;
  }

  std::uint64_t offset() const { return offset_; }

 private:
  std::string path_;
  gzFile g_ = nullptr;
  std::uint64_t offset_ = 0;
};

std::uint32_t be32(const unsigned char* b) { return std::uint32_t(b[0]) << 24 | std::uint32_t(b[1]) << 16 | std::uint32_t(b[2]) << 8 | b[3]; }

// Reads and checks the magic and the dimensions; leaves `in` at the first element.
DataFileInfo read_header(const std::string& path, GzReader& in, DataFileInfo info) {
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

DataFileInfo inspect_idx(const std::string& path, DataFileInfo info) {
  GzReader in(path);
  info = read_header(path, in, info);
  // The data length is known only once decompressed: read it through, allocating one chunk.
  const unsigned __int128 need = (unsigned __int128)info.rows * info.cols * element_bytes(info.idx_type);
  std::vector<unsigned char> chunk(kReadChunk);
  std::uint64_t have = 0;
  for (std::uint64_t got; (got = in.read(chunk.data(), chunk.size())) > 0;) have += got;
  const std::string shape = fmt::format("{} items of {} {} values", info.rows, info.cols, idx_type_name(info.idx_type));
  if (have < need)
    refuse(path, fmt::format("short file: {} bytes of data after the {}-byte header: expected {} ({}); the file is truncated", have,
                             info.data_offset, std::uint64_t(need), shape));
  if (have > need)
    refuse(path, fmt::format("{} bytes of data after the {}-byte header: expected {} ({}): the dimensions do not match the data", have,
                             info.data_offset, std::uint64_t(need), shape));
  return info;
}

void read_idx(const DataFileInfo& info, float* out) {
  GzReader in(info.path);
  const DataFileInfo now = read_header(info.path, in, info);
  if (now.rows != info.rows || now.cols != info.cols || now.idx_type != info.idx_type)
    refuse(info.path, fmt::format("{} items of {} values, was {} of {} when the matrix was loaded: the file changed since", now.rows, now.cols,
                                  info.rows, info.cols));
  const std::uint64_t count = info.rows * info.cols, size = element_bytes(info.idx_type);
  std::vector<unsigned char> chunk(kReadChunk);
  for (std::uint64_t i0 = 0; i0 < count;) {
    const std::uint64_t want = std::min<std::uint64_t>(count - i0, kReadChunk / size);
    if (in.read(chunk.data(), want * size) != want * size)
      refuse(info.path, fmt::format("short read at decompressed byte {}: the file changed while it was read", in.offset()));
    for (std::uint64_t j = 0; j < want; ++j) {
      const unsigned char* b = chunk.data() + j * size;
      float v;
      if (info.idx_type == kIdxUbyte) {
        v = float(b[0]);
      } else {
        const std::uint32_t bits = be32(b);
        std::memcpy(&v, &bits, 4);
        if (!std::isfinite(v))
          refuse(info.path, fmt::format("{} at decompressed byte {} (item {}, value {}): expected finite float32 values", non_finite_name(v),
                                        info.data_offset + 4 * (i0 + j), (i0 + j) / info.cols, (i0 + j) % info.cols));
      }
      out[i0 + j] = v;
    }
    i0 += want;
  }
}

}  // namespace knn::datafile_detail
