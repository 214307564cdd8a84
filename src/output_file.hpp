#pragma once
// Writing a results, markdown or CSV file without destroying anything:
//  - "-" is standard output;
//  - a symlink is followed: its target is replaced, never the link;
//  - a regular file (or a new one) is written through a temporary in the same folder and renamed
//    into place, so a reader never sees half a file; a failed write removes the temporary;
//  - a character device or a FIFO (/dev/null, /dev/stdout's target, a pipe) is written through,
//    every write checked: it is never replaced by a regular file; a FIFO is opened without
//    blocking (O_NONBLOCK): with no reader it fails at once (ENXIO, "no reader"), never waits;
//    one that check_output found with a reader stays open until its write, so that reader sees
//    the whole document; a reader gone by then is EPIPE, not a SIGPIPE that kills the run;
//  - a directory, a socket or a block device is refused.
// Every failure throws ConfigError naming the path and the system's reason (errno).
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace knn {

// Whether `path` names a place that can be rewritten whole after every result (a regular file, or
// one that does not exist yet). Streams ("-", devices, FIFOs) are written once, at the end.
bool rewritable_output(const std::string& path);

void write_output_file(const std::string& path, const std::string& content);

// Whether `path` names standard output ("-", /dev/stdout, /dev/fd/1, /proc/self/fd/1).
bool names_standard_output(const std::string& path);
// When an output goes to standard output, the screen's lines must not mix with it: standard output
// is kept for the data and what the program prints to it goes to standard error from now on.
void reserve_standard_output_for_data();

// Refuses (ConfigError, exit 2) two of the named paths that are the same file, e.g. `--md` naming
// the results file `report` reads, or `--json F --md F`: one would silently replace the other.
// Entries are (what, path), e.g. ("--md", "r.md"); empty paths and "-" are ignored.
void refuse_same_files(const std::vector<std::pair<std::string, std::string>>& named);

// A file a run writes or reads, with what it is: ("--csv", "r.csv"), ("the ground truth of case 501
// (ground_truth_file)", "data/gt.npy").
struct NamedPath {
  std::string what, path;
};

// The checks made before the first measurement, each a ConfigError (exit 2) naming the flag and path.
// "" when `path` holds no control character (a newline, a tab, ESC...), else the path escaped.
std::string control_characters_in(const std::string& path);
// ConfigError "FLAG 'PATH': the path holds a control character; refusing it" (the path escaped).
void refuse_control_characters(const std::string& flag, const std::string& path);
// One output file (--json, --md, --csv): no control character; not a directory, socket or block
// device; a FIFO has a reader (found without blocking, then held open for the final write); a
// character device is /dev/null or a terminal (a device gets the document once, at the end, with no
// journal: one whose writes fail, /dev/full, would lose every finished result) and opens for writing; otherwise its folder (created if missing) takes a new file:
// a probe file is created there and removed. "-" and /dev/stdout-like names pass.
void check_output(const std::string& flag, const std::string& path);
// The journal beside a results file (results_journal.hpp): absent or a regular file, never a link
// (it is truncated and removed: a link would truncate its target), a FIFO, a device or a directory.
void check_journal(const std::string& flag, const std::string& journal);
// A folder the run writes files into (--dump-answers): created when missing, a directory (a link to
// one is followed), able to take a new file (a probe file is created and removed).
void check_output_folder(const std::string& flag, const std::string& dir);
// A file the run will create inside such a folder by rename(2): absent or a regular file; a
// symbolic link (rename would replace the link: refused, the run never writes through one), a
// directory or any other node is refused.
void check_file_in_folder(const std::string& flag, const std::string& path);
// No output is an input (the same file by device and inode, or by canonical path), and no two
// outputs are the same file: "--csv data/gt.npy: is the ground truth of case 501
// (ground_truth_file); refusing to overwrite an input". Empty paths and standard output are skipped.
void refuse_overwriting(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs);

// Removes, in the folder of each output path, the temporaries a killed run left behind: regular
// files of this user named "<name>.{json,md,csv,journal,npy}.tmp.<pid>" whose process no longer exists.
// Returns how many were removed (never fails: a file it cannot remove stays).
int remove_stale_temporaries(const std::vector<std::string>& output_paths);

// Writes all of `content` to `fd`, every write checked; ConfigError naming `path` and errno (a
// full device: ENOSPC) on failure.
void write_all(int fd, const std::string& content, const std::string& path);
void write_all(int fd, const char* data, std::size_t size, const std::string& path);

// Whether process `pid` exists (kill(pid, 0) succeeds or is refused for permission).
bool process_alive(long pid);

}  // namespace knn
