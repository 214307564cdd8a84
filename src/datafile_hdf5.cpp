// The HDF5 reader: one 2-D floating-point dataset of a file, as ann-benchmarks writes them
// ("train", "test"; "neighbors" is their ground truth). libhdf5 reads the file; without it (a
// build that did not find it) every HDF5 path is refused with "built without HDF5".
#include <fmt/format.h>

#include <sys/stat.h>

#include <vector>

#include "datafile_detail.hpp"

#if KNN_HAVE_HDF5
#include <hdf5.h>
#endif

namespace knn {
namespace datafile_detail {

#if KNN_HAVE_HDF5
namespace {

// An hid_t closed by its own function when the scope ends.
struct Hid {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Hid() {
    if (id >= 0) close(id);
  }
};

std::uint64_t size_on_disk(const std::string& file) {
  struct stat st {};
  return ::stat(file.c_str(), &st) == 0 ? std::uint64_t(st.st_size) : 0;
}

hid_t open_file(const DataFileInfo& info) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // problems come back as return values, not printed stacks
  struct stat st {};
  if (::stat(info.file.c_str(), &st) != 0) refuse(info.path, "no such file: expected an HDF5 data file");
  if (!S_ISREG(st.st_mode)) refuse(info.path, "not a regular file: expected an HDF5 data file");
  if (H5Fis_hdf5(info.file.c_str()) <= 0)
    refuse(info.path, "not an HDF5 file (no HDF5 signature found): expected an HDF5 data file");
  const hid_t f = H5Fopen(info.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) refuse(info.path, "HDF5 cannot open the file: it is truncated or corrupt");
  return f;
}

// The dataset's shape (rows, cols); a missing dataset, one that is not 2-D or not floating point is refused.
DataFileInfo shape_of(hid_t file, DataFileInfo info, bool floats) {
  if (H5Lexists(file, info.dataset.c_str(), H5P_DEFAULT) <= 0)
    refuse(info.path, fmt::format("no dataset \"{}\" in the file: expected e.g. train, test (ann-benchmarks' names)", shown(info.dataset, 60)));
  const Hid d{H5Dopen2(file, info.dataset.c_str(), H5P_DEFAULT), H5Dclose};
  if (d.id < 0) refuse(info.path, fmt::format("\"{}\" is not a dataset", shown(info.dataset, 60)));
  const Hid type{H5Dget_type(d.id), H5Tclose};
  const H5T_class_t cls = H5Tget_class(type.id);
  if (floats && cls != H5T_FLOAT)
    refuse(info.path, fmt::format("dataset \"{}\" holds {}: expected floating-point values", info.dataset, cls == H5T_INTEGER ? "integers" : "non-numbers"));
  if (!floats && cls != H5T_INTEGER) refuse(info.path, fmt::format("dataset \"{}\" does not hold integers: expected neighbour indices", info.dataset));
  const Hid space{H5Dget_space(d.id), H5Sclose};
  const int rank = H5Sget_simple_extent_ndims(space.id);
  if (rank != 2) refuse(info.path, fmt::format("dataset \"{}\" is {}-D: expected 2-D (rows, k)", info.dataset, rank));
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(space.id, dims, nullptr);
  if (dims[0] == 0) refuse(info.path, fmt::format("dataset \"{}\" has 0 rows: expected at least one", info.dataset));
  info.rows = dims[0];
  info.cols = dims[1];
  return info;
}

void read_all(const DataFileInfo& info, hid_t file, hid_t mem_type, void* out) {
  const Hid d{H5Dopen2(file, info.dataset.c_str(), H5P_DEFAULT), H5Dclose};
  if (d.id < 0 || H5Dread(d.id, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
    refuse(info.path, fmt::format("HDF5 cannot read dataset \"{}\": the file is truncated or corrupt", info.dataset));
}

// One value of the dataset as float64, unconverted to float32 (for messages).
double value_at(const DataFileInfo& info, hid_t file, std::uint64_t row, std::uint64_t col) {
  const Hid d{H5Dopen2(file, info.dataset.c_str(), H5P_DEFAULT), H5Dclose};
  const Hid space{H5Dget_space(d.id), H5Sclose};
  const hsize_t start[2] = {row, col}, one[2] = {1, 1};
  const Hid mem{H5Screate_simple(2, one, nullptr), H5Sclose};
  double v = 0;
  if (H5Sselect_hyperslab(space.id, H5S_SELECT_SET, start, nullptr, one, nullptr) < 0 ||
      H5Dread(d.id, H5T_NATIVE_DOUBLE, mem.id, space.id, H5P_DEFAULT, &v) < 0)
    refuse(info.path, fmt::format("HDF5 cannot read dataset \"{}\": the file is truncated or corrupt", info.dataset));
  return v;
}

}  // namespace

DataFileInfo inspect_hdf5(DataFileInfo info) {
  const Hid f{open_file(info), H5Fclose};
  info = shape_of(f.id, info, true);
  info.file_bytes = size_on_disk(info.file);
  return info;
}

namespace {
// Rows in ranges, each a hyperslab of the dataset, converted to float32 by HDF5 (float64 and
// big-endian data included).
class Hdf5Rows final : public RowReader {
 public:
  explicit Hdf5Rows(const DataFileInfo& info) : info_(info), f_{open_file(info), H5Fclose} {
    const DataFileInfo now = shape_of(f_.id, info, true);
    if (now.rows != info.rows || now.cols != info.cols || size_on_disk(info.file) != info.file_bytes)
      refuse(info.path, "the file changed since the matrix was loaded");
  }
  void read(std::uint64_t first, std::uint64_t rows, float* out) override {
    const Hid d{H5Dopen2(f_.id, info_.dataset.c_str(), H5P_DEFAULT), H5Dclose};
    const Hid space{d.id >= 0 ? H5Dget_space(d.id) : -1, H5Sclose};
    const hsize_t start[2] = {first, 0}, count[2] = {rows, info_.cols};
    const Hid mem{H5Screate_simple(2, count, nullptr), H5Sclose};
    if (space.id < 0 || mem.id < 0 || H5Sselect_hyperslab(space.id, H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
        H5Dread(d.id, H5T_NATIVE_FLOAT, mem.id, space.id, H5P_DEFAULT, out) < 0)
      refuse(info_.path, fmt::format("HDF5 cannot read dataset \"{}\": the file is truncated or corrupt", info_.dataset));
    const std::uint64_t floats = rows * info_.cols;
    const std::size_t bad = first_non_finite(out, std::size_t(floats));
    if (bad == floats) return;
    const std::uint64_t row = first + bad / info_.cols, col = bad % info_.cols;
    // A float64 beyond float32's range became an infinity in the conversion: say what the file holds.
    const double held = value_at(info_, f_.id, row, col);
    if (std::isfinite(held))
      refuse(info_.path, fmt::format("{:g} in dataset \"{}\" (row {}, coordinate {}) overflows float32 (largest ±{:g}): expected values within float32 range",
                                     held, info_.dataset, row, col, double(FLT_MAX)));
    refuse(info_.path, fmt::format("{} in dataset \"{}\" (row {}, coordinate {}): expected finite values", non_finite_name(out[bad]), info_.dataset, row, col));
  }

 private:
  DataFileInfo info_;
  Hid f_;
};
}  // namespace

std::unique_ptr<RowReader> hdf5_rows(const DataFileInfo& info) { return std::make_unique<Hdf5Rows>(info); }

}  // namespace datafile_detail

bool built_with_hdf5() { return true; }

namespace datafile_detail {
namespace {
DataFileInfo neighbors_of(const std::string& queries_path) {
  DataFileInfo info;
  info.file = data_file_on_disk(queries_path);
  info.path = info.file + ":neighbors";
  info.dataset = "neighbors";
  return info;
}
// Whether the file has "neighbors"; when it has, their shape (in `info`) is checked against the case.
bool has_neighbors(hid_t file, std::uint64_t m, int topk, DataFileInfo& info) {
  if (H5Lexists(file, "neighbors", H5P_DEFAULT) <= 0) return false;  // no ground truth: nothing to check
  info = shape_of(file, info, false);
  expect_truth_shape(info.path, info.rows, info.cols, m, topk);
  return true;
}
}  // namespace

bool inspect_hdf5_neighbors(const std::string& queries_path, std::uint64_t m, int topk) {
  DataFileInfo info = neighbors_of(queries_path);
  const Hid f{open_file(info), H5Fclose};
  return has_neighbors(f.id, m, topk, info);
}

bool read_hdf5_neighbors(const std::string& queries_path, std::uint64_t m, std::uint64_t n, int topk, std::vector<std::int32_t>& out) {
  DataFileInfo info = neighbors_of(queries_path);
  const Hid f{open_file(info), H5Fclose};
  if (!has_neighbors(f.id, m, topk, info)) return false;
  // Read unnarrowed (HDF5 would clamp 3000000000 to 2147483647): an index out of range is named as the file holds it.
  const Hid d{H5Dopen2(f.id, "neighbors", H5P_DEFAULT), H5Dclose};
  const Hid type{H5Dget_type(d.id), H5Tclose};
  if (H5Tget_sign(type.id) == H5T_SGN_NONE) {
    std::vector<std::uint64_t> all(info.rows * info.cols);
    read_all(info, f.id, H5T_NATIVE_UINT64, all.data());
    first_columns(info.path, all, info.cols, m, n, topk, out);
  } else {
    std::vector<std::int64_t> all(info.rows * info.cols);
    read_all(info, f.id, H5T_NATIVE_INT64, all.data());
    first_columns(info.path, all, info.cols, m, n, topk, out);
  }
  return true;
}
}  // namespace datafile_detail

#else  // built without HDF5

[[noreturn]] void no_hdf5(const std::string& path) {
  refuse(path, "knnbench was built without HDF5 (install libhdf5-dev and build again): cannot read HDF5 files");
}
DataFileInfo inspect_hdf5(DataFileInfo info) { no_hdf5(info.path); }
std::unique_ptr<RowReader> hdf5_rows(const DataFileInfo& info) { no_hdf5(info.path); }

}  // namespace datafile_detail

bool built_with_hdf5() { return false; }

namespace datafile_detail {
bool read_hdf5_neighbors(const std::string& queries_path, std::uint64_t, std::uint64_t, int, std::vector<std::int32_t>&) { no_hdf5(queries_path); }
bool inspect_hdf5_neighbors(const std::string& queries_path, std::uint64_t, int) { no_hdf5(queries_path); }
}  // namespace datafile_detail

#endif

}  // namespace knn
