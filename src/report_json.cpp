// The JSON reporter: the results schema (results_schema.cpp), rewritten after every result.
#include "output_file.hpp"
#include "report.hpp"

namespace knn {
namespace {

class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::string path) : path_(std::move(path)) {}
  // A file is rewritten after every result (an interrupted run keeps what finished); a stream
  // ("-", a device, a FIFO) gets the document once, at the end.
  void begin(const RunInfo& info) override {
    if (rewritable_output(path_)) write(info, {});
  }
  void result(const RunInfo& info, const std::vector<Result>& all) override {
    if (rewritable_output(path_)) write(info, all);
  }
  void end(const RunInfo& info, const std::vector<Result>& all) override { write(info, all); }

 private:
  void write(const RunInfo& info, const std::vector<Result>& all) { write_file_atomically(path_, results_to_json(info, all).dump(1) + "\n"); }
  std::string path_;
};

}  // namespace

std::unique_ptr<Reporter> make_json_reporter(std::string path) { return std::make_unique<JsonReporter>(std::move(path)); }

}  // namespace knn
