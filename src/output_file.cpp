#include "output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

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

// Streams check_output found with a reader, held open (their target -> descriptor) until their write.
std::map<std::string, int> held_streams;

const char* kind_of(const struct stat& st) {
  return S_ISDIR(st.st_mode)    ? "a directory"
         : S_ISSOCK(st.st_mode) ? "a socket"
         : S_ISBLK(st.st_mode)  ? "a block device"
         : S_ISLNK(st.st_mode)  ? "a symbolic link"
         : S_ISFIFO(st.st_mode) ? "a FIFO"
         : S_ISCHR(st.st_mode)  ? "a character device"
         : S_ISREG(st.st_mode)  ? "a regular file"
                                : "not a regular file";
}

// A FIFO or character device opened for writing without waiting for a reader (a FIFO without one is
// ENXIO, said in words), then made blocking for the write itself; a held one is taken back.
int open_stream(const std::string& target, const std::string& who) {
  if (const auto it = held_streams.find(target); it != held_streams.end()) {
    const int fd = it->second;
    held_streams.erase(it);
    return fd;
  }
  const int fd = ::open(target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 && errno == ENXIO && ::stat(target.c_str(), &st) == 0 && S_ISFIFO(st.st_mode))
    throw ConfigError(fmt::format("{}: a FIFO with no reader ({}): start its reader first, or name a file", who, std::strerror(ENXIO)));
  if (fd < 0) fail(who, "cannot open for writing", errno);
  if (const int flags = ::fcntl(fd, F_GETFL); flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

// write_all with SIGPIPE blocked: a reader gone is EPIPE, an error naming the path, not a signal
// that ends the run; the SIGPIPE it raised is taken back before the mask is restored.
void write_stream(int fd, const std::string& content, const std::string& path) {
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  std::string error;
  try {
    write_all(fd, content, path);
  } catch (const ConfigError& e) {
    error = e.what();
  }
  if (::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) && !sigismember(&old, SIGPIPE)) {
    const timespec now{0, 0};
    ::sigtimedwait(&pipe_only, nullptr, &now);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!error.empty()) throw ConfigError(error);
}

// The folder of an output (created when missing) takes a new file: a probe is created and removed.
void probe_folder(const std::string& who, const fs::path& folder) {
  const fs::path dir = folder.empty() ? fs::path(".") : folder;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(who, fmt::format("cannot create the folder {}", dir.string()), ec.value());
  const std::string probe = (dir / fmt::format(".knnbench-probe.{}", ::getpid())).string();
  ::unlink(probe.c_str());  // a probe of a dead process with this pid (never followed: unlink takes the name)
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) fail(who, fmt::format("the folder {} cannot take a new file", dir.string()), errno);
  ::close(fd);
  ::unlink(probe.c_str());
}

// /dev/null (character device 1:3), the sink that takes every write and keeps nothing.
bool is_null_device(const struct stat& st) { return S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3; }

// Where a path leads: absolute, symlinks followed even when their target does not exist yet (a
// dangling link is written through), the rest canonical as far as it exists, `..` folded.
fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  for (int hops = 0; hops < 40 && fs::is_symlink(p, ec); ++hops) {
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) break;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return fs::weakly_canonical(p, ec).lexically_normal();
}

// Who a file is: device and inode when it exists (so links and hard links meet), else where its
// path leads (resolved).
std::string identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return fmt::format("inode {}:{}", st.st_dev, st.st_ino);
  return "path " + resolved(path).string();
}

}  // namespace

void write_all(int fd, const std::string& content, const std::string& path) { write_all(fd, content.data(), content.size(), path); }

void write_all(int fd, const char* data, std::size_t size, const std::string& path) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
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
    write_stream(fd, content, path == "-" ? "standard output" : path);
    return;
  }
  const std::string target = resolve(path);
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {  // write through; never replace the node
      const int fd = open_stream(target, path);
      try {
        write_stream(fd, content, path);
      } catch (...) {
        ::close(fd);
        throw;
      }
      if (::close(fd) != 0) fail(path, "write failed", errno);
      return;
    }
    throw ConfigError(fmt::format("{}: is {}: expected a file to write", path, kind_of(st)));
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
      const bool same = identity(a) == identity(b) || fs::equivalent(a, b, ec);
      if (same)
        throw ConfigError(fmt::format("{} {} and {} {} are the same file: one would replace the other", named[i].first, a,
                                      named[j].first, b));
    }
}

std::string control_characters_in(const std::string& path) {
  if (std::none_of(path.begin(), path.end(), [](char c) { return (unsigned char)c < 0x20 || c == 0x7f; })) return "";
  std::string shown;
  for (const char c : path)
    shown += (unsigned char)c < 0x20 || c == 0x7f ? fmt::format("\\x{:02x}", (unsigned char)c) : std::string(1, c);
  return shown;
}

void refuse_control_characters(const std::string& flag, const std::string& path) {
  if (const std::string shown = control_characters_in(path); !shown.empty())
    throw ConfigError(fmt::format("{} '{}': the path holds a control character; refusing it", flag, shown));
}

void check_output(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  refuse_control_characters(flag, path);
  if (named_descriptor(path) >= 0) return;
  const std::string who = flag + " " + path, target = resolve(path);
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) fail(who, "cannot look at it", errno);  // ENOTDIR: probe_folder names the folder
  } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
    if (held_streams.count(target)) return;
    const int fd = open_stream(target, who);
    if (S_ISFIFO(st.st_mode)) {
      held_streams[target] = fd;  // its reader would see an end of file if closed now
      return;
    }
    const bool terminal = ::isatty(fd) == 1;
    ::close(fd);
    // A device gets the document once, at the end, with no journal beside it: one whose writes may
    // fail (/dev/full, a disk's raw node, a serial line) would lose every finished result then.
    if (!terminal && !is_null_device(st))
      throw ConfigError(fmt::format("{}: is a character device ({}:{}) other than /dev/null or a terminal: it gets the results once, at "
                                    "the end, with no journal beside it, so a failed write there would lose every finished result; "
                                    "name a regular file (or - to pipe them)",
                                    who, major(st.st_rdev), minor(st.st_rdev)));
    return;
  } else if (!S_ISREG(st.st_mode)) {
    throw ConfigError(fmt::format("{}: is {}: expected a file to write", who, kind_of(st)));
  }
  probe_folder(who, fs::path(target).parent_path());
}

void check_journal(const std::string& flag, const std::string& journal) {
  struct stat st {};
  if (::lstat(journal.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    fail(fmt::format("{}: its journal {}", flag, journal), "cannot look at it", errno);
  }
  if (!S_ISREG(st.st_mode))
    throw ConfigError(fmt::format("{}: its journal {} is {}: expected a regular file or none (it is truncated, then removed); "
                                  "remove it or name another results file",
                                  flag, journal, kind_of(st)));
  // A journal with a result after its header line is what a killed run left: its only copy.
  std::ifstream in(journal);
  std::string line;
  int lines = 0;
  while (lines < 2 && std::getline(in, line)) lines += line.empty() ? 0 : 1;
  if (lines >= 2)
    throw ConfigError(fmt::format("{}: its journal {} holds finished results of a run that did not end (killed?): `knnbench report {} "
                                  "--md FILE` reads them; move or remove the journal, or name another results file",
                                  flag, journal, journal.substr(0, journal.size() - std::string(".journal").size())));
}

void check_output_folder(const std::string& flag, const std::string& dir) {
  refuse_control_characters(flag, dir);
  const std::string who = flag + " " + dir;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) throw ConfigError(fmt::format("{}: is {}: expected a folder", who, kind_of(st)));
  probe_folder(who, dir);
}

void check_file_in_folder(const std::string& flag, const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    fail(fmt::format("{}: {}", flag, path), "cannot look at it", errno);
  }
  if (S_ISLNK(st.st_mode))
    throw ConfigError(fmt::format("{}: {} is a symbolic link: answers are never written through a link, nor is it replaced; remove it", flag, path));
  if (!S_ISREG(st.st_mode)) throw ConfigError(fmt::format("{}: {} is {}: expected a file to replace, or none", flag, path, kind_of(st)));
}

void refuse_overwriting(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  std::map<std::string, const NamedPath*> read, written;
  for (const NamedPath& in : inputs)
    if (!in.path.empty()) read.emplace(identity(in.path), &in);
  for (const NamedPath& out : outputs) {
    if (out.path.empty() || named_descriptor(out.path) >= 0) continue;
    const std::string id = identity(out.path);
    if (const auto it = read.find(id); it != read.end())
      throw ConfigError(fmt::format("{} {}: is {}; refusing to overwrite an input", out.what, out.path, it->second->what));
    if (const auto [it, fresh] = written.emplace(id, &out); !fresh)
      throw ConfigError(fmt::format("{} {} and {} {} are the same file: one would replace the other", it->second->what, it->second->path,
                                    out.what, out.path));
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
      if (ext != ".json" && ext != ".md" && ext != ".csv" && ext != ".journal" && ext != ".npy") continue;
      struct stat st {};
      if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid()) continue;
      if (process_alive(std::stol(pid))) continue;
      if (::unlink(it->path().c_str()) == 0) ++removed;
    }
  }
  return removed;
}

}  // namespace knn
