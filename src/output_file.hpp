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

// Refuses (ConfigError, exit 2) two of the named paths that are the same file, e.g. `--md` naming
// the results file `report` reads, or `--json F --md F`: one would silently replace the other.
// Entries are (what, path), e.g. ("--md", "r.md"); empty paths and "-" are ignored.
void refuse_same_files(const std::vector<std::pair<std::string, std::string>>& named);

}  // namespace knn
