#pragma once
// The reporters of a run as the runner drives them (report.hpp): the run's description, every
// result so far and the (case, version) count of the progress line. Rank 0 alone reports under
// mpirun: on the other ranks the reporters are none and no result is kept.
#include <memory>
#include <string>
#include <vector>

#include "prepare.hpp"
#include "report.hpp"
#include "result.hpp"

namespace knn {

class RunReport final : public Progress {
 public:
  // `keeps_results`: false on the ranks other than 0; `total`: the plan's (case, version) items.
  RunReport(RunInfo info, std::vector<std::unique_ptr<Reporter>> reporters, int total, bool keeps_results);
  // An error in flight after begin() (a bad data file found mid-run, exit 2; or one from end()):
  // what finished is saved whole first, the run marked incomplete.
  ~RunReport() override;
  RunReport(const RunReport&) = delete;
  RunReport& operator=(const RunReport&) = delete;

  RunInfo& info() { return info_; }  // complete it before begin()
  void begin();
  void step(const Case& c, const std::string& what) override;
  void start(const Case& c, const std::string& label) override;  // the next item of the plan
  void finish(Result r);
  // Every reporter's end, once: `complete` unless interrupted. A reporter whose end fails (its final
  // write) does not stop the others; then one ConfigError gives every failure, and the destructor
  // does not end them again (the final table is printed once).
  void end(bool complete);

  const std::vector<Result>& results() const { return results_; }
  bool any_fail() const { return any_fail_; }  // a result with status fail (an inexact peer is not one)

 private:
  RunInfo info_;
  std::vector<std::unique_ptr<Reporter>> reporters_;
  std::vector<Result> results_;
  int total_ = 0, index_ = 0;
  bool keeps_ = true, any_fail_ = false, begun_ = false, ended_ = false;
  int exceptions_ = 0;  // std::uncaught_exceptions() at begin()
};

}  // namespace knn
