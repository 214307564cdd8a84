#pragma once
// Writing a results, markdown or CSV file without destroying anything:
//  - "-" is standard output;
//  - a symlink is followed: its target is replaced, never the link;
//  - a regular file (or a new one) is written through a temporary in the same folder and renamed
//    into place, so a reader never sees half a file; a failed write removes the temporary;
//  - a character device or a FIFO (/dev/null, /dev/stdout's target, a pipe) is written through,
//    every write checked: it is never replaced by a regular file;
//  - a directory, a socket or a block device is refused.
// Every failure throws ConfigError naming the path and the system's reason (errno).
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

// Removes, in the folder of each output path, the temporaries a killed run left behind: regular
// files of this user named "<name>.{json,md,csv,journal}.tmp.<pid>" whose process no longer exists.
// Returns how many were removed (never fails: a file it cannot remove stays).
int remove_stale_temporaries(const std::vector<std::string>& output_paths);

// Writes all of `content` to `fd`, every write checked; ConfigError naming `path` and errno (a
// full device: ENOSPC) on failure.
void write_all(int fd, const std::string& content, const std::string& path);

// Whether process `pid` exists (kill(pid, 0) succeeds or is refused for permission).
bool process_alive(long pid);

}  // namespace knn
