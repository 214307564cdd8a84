#pragma once
// Reporters: screen, JSON, markdown and CSV each read the same result records.
#include <memory>
#include <string>
#include <vector>

#include "result.hpp"
#include "results_schema.hpp"  // the writer and reader of the JSON reporter's schema

namespace knn {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void begin(const RunInfo& /*info*/) {}
  // A (case, version) is about to run: number `index` (0-based) of `total`.
  virtual void start(const RunInfo& /*info*/, const Case& /*c*/, const std::string& /*version*/, int /*index*/, int /*total*/) {}
  // A step of the current case that takes time before its versions run: "generating data",
  // "validation reference". Shown on a terminal's progress line.
  virtual void step(const Case& /*c*/, const std::string& /*what*/) {}
  // A result finished; `all` holds every finished result so far, this one last.
  virtual void result(const RunInfo& /*info*/, const std::vector<Result>& /*all*/) {}
  virtual void end(const RunInfo& /*info*/, const std::vector<Result>& /*all*/) {}
};

std::unique_ptr<Reporter> make_screen_reporter(bool quiet);
// Writes the header at the start, a journal line per result and the whole file at the end, so an
// interrupted or killed run keeps what finished (results_journal.hpp).
std::unique_ptr<Reporter> make_json_reporter(std::string path);
std::unique_ptr<Reporter> make_markdown_reporter(std::string path);
std::unique_ptr<Reporter> make_csv_reporter(std::string path);

// Writes `content` to `path` safely (output_file.hpp: "-" is stdout, devices and FIFOs are written
// through, symlinks followed, regular files replaced through a temporary and rename(2)).
void write_file_atomically(const std::string& path, const std::string& content);

// Text helpers shared by the screen and markdown reporters.
std::string format_ms(double ms);
// The seeds' table: one row per version, one column per case, cells are median ms
// ("skip", "FAIL" otherwise). Returns rows of cells, the first row being the header.
std::vector<std::vector<std::string>> summary_table(const std::vector<Result>& results);
// One cell of it: median ms, "*" when not validated, "~" when the noise target was missed;
// "FAIL", "skip" or "interrupted" for a result without a time.
std::string summary_cell(const Result& r);
// The lines explaining the marks the table of `results` holds, then ground_truth_legend ("" when none).
std::string summary_legend(const std::vector<Result>& results);
// A peer's inexact answer in words: "1 of 1024 queries wrong, 1 wrong neighbours of 1024, recall@topk 0.999".
std::string inexact_text(const Result& r);
// "! = inexact: ..." naming every inexact result with its counts; empty when there is none.
std::string inexact_legend(const std::vector<Result>& results);
// What a validated result was checked against when it is not v0's answer to every query alone:
// "v0 reference + neighbors of F.hdf5", "v0 reference (1000 of 10000 queries)"; "" otherwise
// (v0 reference alone, or not validated).
std::string ground_truth_remark(const Result& r);
// One line per such ground truth, naming the cases (and the versions, where others of the case
// were checked against something else): "Validated against v0 reference + t.npy: case 7.".
std::string ground_truth_legend(const std::vector<Result>& results);
// A noise in percent with one decimal, "-" when unknown (NaN).
std::string format_noise_pct(double pct);
// What a reader must know about a result beyond its time: interrupted, noise target missed,
// calls per sample, a clock or throttle change during sampling ("" when nothing).
std::string result_remarks(const Result& r);
// The run's host memory, with the reason when pinned memory fell back to pageable (no device):
// "pageable (pinned memory needs a CUDA device, none here: built without CUDA)".
std::string host_memory_text(const RunInfo& info);
// Median of a phase over the samples, or a negative value when the phase was not reported.
double phase_median(const Result& r, const std::string& phase);
// Every phase a result reported except the harness's own (build, query) and the total: the
// versions' finer phases (h2d, alloc, transpose, kernel, d2h, ...) as "h2d 1.23, kernel 4.56".
std::string version_phases_text(const Result& r);
// The host canary's min, median and max over the results, the run's host facts, and a warning
// line when max/min exceeds kCanarySpreadWarning ("" without canaries; report_canary.cpp).
std::string canary_spread_text(const RunInfo& info, const std::vector<Result>& results, bool markdown);

// The floors (floor.hpp; report_floor.cpp). A result's floor_ms with its bound ("12.3 (copy)"),
// "none" when decided without one, "" when not decided; its x_floor ("2.31"), "" without one.
std::string floor_ms_text(const Result& r);
std::string x_floor_text(const Result& r);
// A GPU result's busy share of its median in percent ("97", "37 host-bound" under kGpuBoundShare),
// "-" when it was not traced (the note says why), "" when not decided (gpu_busy.hpp).
std::string gpu_busy_text(const Result& r);
// The summary table's last row: under each "case N" of `head`, the fastest version's x_floor and
// bound ("2.31 copy"), "-" when it has none; empty when no result has a floor.
std::vector<std::string> floor_row(const std::vector<Result>& results, const std::vector<std::string>& head);
// The line explaining that row; "" when no result has a floor.
std::string floor_legend(const std::vector<Result>& results);
// Device `device`'s start-up rates in one line, or why there are none.
std::string rates_text(const RunInfo& info, std::size_t device);

}  // namespace knn
