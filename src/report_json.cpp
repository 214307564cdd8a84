// The JSON reporter: the results schema (results_schema.cpp). A results file gets its header when
// the run starts, one journal line per finished result (results_journal.hpp), and the whole
// document at the end: linear bookkeeping, and a run killed at any point loses nothing finished.
#include <memory>

#include "output_file.hpp"
#include "report.hpp"
#include "results_journal.hpp"

namespace knn {
namespace {

class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::string path) : path_(std::move(path)) {}
  // A stream ("-", a device, a FIFO) gets the document once, at the end, and no journal.
  void begin(const RunInfo& info) override {
    if (!rewritable_output(path_)) return;
    write(info, {});
    journal_ = std::make_unique<Journal>(path_, info.started_utc);
  }
  void result(const RunInfo&, const std::vector<Result>& all) override {
    if (journal_) journal_->append(result_to_json(all.back()));
  }
  void end(const RunInfo& info, const std::vector<Result>& all) override {
    write(info, all);
    if (journal_) journal_->remove();
  }

 private:
  void write(const RunInfo& info, const std::vector<Result>& all) { write_file_atomically(path_, results_to_json(info, all).dump(1) + "\n"); }
  std::string path_;
  std::unique_ptr<Journal> journal_;
};

}  // namespace

std::unique_ptr<Reporter> make_json_reporter(std::string path) { return std::make_unique<JsonReporter>(std::move(path)); }

}  // namespace knn
