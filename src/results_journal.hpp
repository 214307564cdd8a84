#pragma once
// The journal of a results file being written: "<file>.journal" beside it, one line per finished
// result (JSON Lines), appended and fsync'd as each result finishes. The results file itself is
// written twice: its header with no results when the run starts, and whole at the end, when the
// journal is removed. So the bookkeeping is linear in the results (the file is not rewritten after
// each one) and a run killed at any point leaves the header plus a journal that the reader merges:
// nothing finished is lost.
//
// The journal's first line ties it to its run: {"journal_of": "knnbench", "date_utc": "<started>"}.
// A journal whose date differs from the file's meta.date_utc is another run's and is not merged.
#include <nlohmann/json.hpp>
#include <cstddef>
#include <string>
#include <vector>

namespace knn {

std::string journal_path(const std::string& results_path);

class Journal {
 public:
  // Creates (truncates) the journal of `results_path` for the run started at `date_utc`.
  // ConfigError naming the journal and errno when it cannot be written.
  Journal(std::string results_path, const std::string& date_utc);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  // Appends one line and makes it durable (fdatasync) before returning. A failed write (a full disk)
  // is a ConfigError naming the results file, the result, the system's reason and where the results
  // booked before it are.
  void append(const nlohmann::ordered_json& result);
  // The results file now holds everything: the journal goes.
  void remove();

 private:
  std::string path_, results_path_;
  int fd_ = -1;
  std::size_t booked_ = 0;
};

// When `results_path` has a journal of the same run as `doc` and doc holds no results yet (the
// header the run wrote at its start), appends its results to doc's "results" and marks the run
// incomplete; returns how many were merged, and puts in `lines` (when given) the journal line each
// came from. The journal is read as any input (read_input_file): one that is not a regular file
// (a directory, a FIFO, a device) is a SchemaError naming it, never passed over or waited on. A
// torn last line (the process died mid-write) is ignored; a bad line before it is a SchemaError
// naming the journal and the line.
int merge_journal(const std::string& results_path, nlohmann::json& doc, std::vector<std::size_t>* lines = nullptr);

}  // namespace knn
