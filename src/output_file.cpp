#include "output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <filesystem>

#include "core/errors.hpp"

namespace knn {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw ConfigError(fmt::format("{}: {} ({})", path, what, std::strerror(err)));
}

// The path to write: a symlink's final target (so the link stays a link), else the path itself.
std::string resolve(const std::string& path) {
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(path, ec))) return path;
  fs::path target = fs::canonical(fs::path(path), ec);  // an existing target
  if (ec) target = fs::weakly_canonical(fs::path(path), ec);  // a dangling link: its target is created
  if (ec) fail(path, "cannot follow the symbolic link", ec.value());
  return target.string();
}

int data_stdout = STDOUT_FILENO;  // moved by reserve_standard_output_for_data

// An already open descriptor the path names: /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N
// (their links end in "pipe:[…]" or in a file the shell opened: written at the descriptor's own
// offset, never reopened or replaced). -1 otherwise.
int named_descriptor(const std::string& path) {
  if (path == "-" || path == "/dev/stdout" || path == "/dev/fd/1" || path == "/proc/self/fd/1") return data_stdout;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/"})
    if (path.rfind(prefix, 0) == 0) {
      const std::string n = path.substr(prefix.size());
      if (!n.empty() && n.size() < 6 && n.find_first_not_of("0123456789") == std::string::npos) return std::stoi(n);
    }
  return -1;
}

}  // namespace

void write_all(int fd, const std::string& content, const std::string& path) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(path, "write failed", n < 0 ? errno : EIO);
    done += std::size_t(n);
  }
}

bool names_standard_output(const std::string& path) { return named_descriptor(path) == data_stdout; }

void reserve_standard_output_for_data() {
  if (data_stdout != STDOUT_FILENO) return;
  std::fflush(stdout);
  const int saved = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (saved < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) fail("standard output", "cannot set it aside for the results", errno);
  data_stdout = saved;
}

bool rewritable_output(const std::string& path) {
  if (named_descriptor(path) >= 0) return false;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return true;  // new file (or an error the write will name)
  return S_ISREG(st.st_mode);
}

void write_output_file(const std::string& path, const std::string& content) {
  if (const int fd = named_descriptor(path); fd >= 0) {
    write_all(fd, content, path == "-" ? "standard output" : path);
    return;
  }
  const std::string target = resolve(path);
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {  // write through; never replace the node
      const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) fail(path, "cannot open for writing", errno);
      try {
        write_all(fd, content, path);
      } catch (...) {
        ::close(fd);
        throw;
      }
      if (::close(fd) != 0) fail(path, "write failed", errno);
      return;
    }
    const char* kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISSOCK(st.st_mode) ? "a socket" : S_ISBLK(st.st_mode) ? "a block device" : "not a regular file";
    throw ConfigError(fmt::format("{}: is {}: expected a file to write", path, kind));
  }
  const fs::path where(target);
  if (where.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(where.parent_path(), ec);
    if (ec) fail(path, fmt::format("cannot create the folder {}", where.parent_path().string()), ec.value());
  }
  const std::string tmp = target + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, fmt::format("cannot create the temporary {}", tmp), errno);
  try {
    try {
      write_all(fd, content, path);
      // On disk before the rename: the run's journal is removed after this final write.
      if (::fdatasync(fd) != 0 && errno != EINVAL) fail(path, "fdatasync failed", errno);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) fail(path, "write failed", errno);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, fmt::format("cannot rename {} into place", tmp), err);
  }
}

void refuse_same_files(const std::vector<std::pair<std::string, std::string>>& named) {
  std::error_code ec;
  for (std::size_t i = 0; i < named.size(); ++i)
    for (std::size_t j = i + 1; j < named.size(); ++j) {
      const std::string& a = named[i].second;
      const std::string& b = named[j].second;
      if (a.empty() || b.empty() || a == "-" || b == "-") continue;
      const bool same = fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec) || fs::equivalent(a, b, ec);
      if (same)
        throw ConfigError(fmt::format("{} {} and {} {} are the same file: one would replace the other", named[i].first, a,
                                      named[j].first, b));
    }
}

bool process_alive(long pid) { return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM); }

int remove_stale_temporaries(const std::vector<std::string>& output_paths) {
  int removed = 0;
  std::vector<fs::path> folders;
  for (const std::string& p : output_paths) {
    if (p.empty() || named_descriptor(p) >= 0) continue;
    fs::path parent;
    try {
      parent = fs::path(resolve(p)).parent_path();
    } catch (const ConfigError&) {
      continue;  // the write names the broken link
    }
    const fs::path folder = parent.empty() ? fs::path(".") : parent;
    if (std::find(folders.begin(), folders.end(), folder) == folders.end()) folders.push_back(folder);
  }
  for (const fs::path& folder : folders) {
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const auto mark = name.rfind(".tmp.");
      if (mark == std::string::npos) continue;
      const std::string pid = name.substr(mark + 5), stem = name.substr(0, mark);
      if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      const auto dot = stem.rfind('.');
      const std::string ext = dot == std::string::npos ? "" : stem.substr(dot);
      if (ext != ".json" && ext != ".md" && ext != ".csv" && ext != ".journal") continue;
      struct stat st {};
      if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid()) continue;
      if (process_alive(std::stol(pid))) continue;
      if (::unlink(it->path().c_str()) == 0) ++removed;
    }
  }
  return removed;
}

}  // namespace knn
