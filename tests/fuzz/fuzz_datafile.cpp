// libFuzzer target for the data-file readers (src/datafile.cpp). The first input byte picks the
// format: byte % 4 selects .npy, .fvecs, raw float32 (.bin) or .csv, and for raw float32 the row
// length k is byte / 4 + 1 (1..64). The other bytes become the file, written into a folder of this
// process under $KNN_FUZZ_TMP (scripts/test/fuzz.sh sets it and removes it afterwards), else /dev/shm
// where there is one, else $TMPDIR or /tmp; the folder is removed at exit and stays only after a
// crash. inspect_data_file runs on the file; when that succeeds with a modest shape,
// read_data_file fills a std::vector of exactly rows × cols floats (so AddressSanitizer sees a
// write past it), prefilled with NaN: a read that succeeds must leave every value finite.
// ConfigError is the only acceptable exception; another exception, a crash, a hang or a sanitizer
// report is a finding, and so is a successful read that leaves a non-finite value. With
// KNN_FUZZ_MESSAGES=1 in the environment, so is a ConfigError whose message holds a control
// character (below 0x20), does not start with the file's path and ':', or says that the file
// changed (nothing changes it between inspect and read here). Findings of the target abort.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "datafile.hpp"
#include "core/errors.hpp"
#include "fuzz_messages.hpp"

namespace {

constexpr std::uint64_t kMaxFloats = std::uint64_t(1) << 22;  // bigger shapes are inspected only
const char* const kExtensions[4] = {".npy", ".fvecs", ".bin", ".csv"};

// This process's folder for the input file, made on first use and removed at exit.
std::string temp_dir;

void remove_temp_dir() {
  for (const char* ext : kExtensions) ::unlink((temp_dir + "/input" + ext).c_str());
  ::rmdir(temp_dir.c_str());
}

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_datafile: %s: %.300s\n", what, detail.c_str());
  if (!temp_dir.empty()) remove_temp_dir();
  std::abort();
}

const std::string& folder() {
  if (temp_dir.empty()) {
    struct stat st {};
    const char* given = std::getenv("KNN_FUZZ_TMP");
    const char* tmp = std::getenv("TMPDIR");
    std::string base = "/tmp";
    if (given && *given) base = given;
    else if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) base = "/dev/shm";
    else if (tmp && *tmp) base = tmp;
    temp_dir = base + "/knn_fuzz_datafile_" + std::to_string(::getpid());
    if (::mkdir(temp_dir.c_str(), 0700) != 0 && errno != EEXIST) finding("cannot create the temporary folder", temp_dir);
    std::atexit(remove_temp_dir);
  }
  return temp_dir;
}

void write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) finding("cannot write the input file", path);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void check_message(const std::string& m, const std::string& path) {
  if (!knn::fuzz::keeps_message_contract(m, path + ":"))
    finding("ConfigError message breaks the contract (one line, no control characters, starting with the file)", m);
  // The readers' "changed" refusals end so; a CSV token quoted in a message cannot end one.
  for (const char* tail : {"the file changed since", "the file changed since it was inspected", "the file changed while it was read"})
    if (ends_with(m, tail)) finding("ConfigError says the file changed, but nothing changed it", m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned selector = data[0];
  const unsigned format = selector % 4;
  const std::uint64_t raw_cols = selector / 4 + 1;
  const std::string path = folder() + "/input" + kExtensions[format];
  write_file(path, data + 1, size - 1);
  try {
    const knn::DataFileInfo info = knn::inspect_data_file(path, raw_cols);
    if (info.cols != 0 && info.rows > kMaxFloats / info.cols) return 0;  // memory is not the target
    std::vector<float> out(std::size_t(info.rows * info.cols), std::numeric_limits<float>::quiet_NaN());
    knn::read_data_file(info, out.data());
    for (std::size_t i = 0; i < out.size(); ++i)
      if (!std::isfinite(out[i])) finding("read_data_file succeeded but left a non-finite value", "at index " + std::to_string(i));
  } catch (const knn::ConfigError& e) {
    if (knn::fuzz::check_messages()) check_message(e.what(), path);
  }
  return 0;
}
