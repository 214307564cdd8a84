#pragma once
#include <map>
#include <string>

namespace knn {

// Collects the phase times (ms) a version reports during one call. The harness owns it:
// it adds `build`/`query` wall times itself; versions add finer phases such as
// `h2d`, `kernel`, `d2h` (CUDA events) or `setup`. Repeated phases in one call add up.
class TimingSink {
 public:
  void add(const std::string& phase, double ms) { phases_[phase] += ms; }
  // A phase measured on one GPU of a multi-GPU version (reported per device).
  void add_device(int device, const std::string& phase, double ms) { device_phases_[device][phase] += ms; }

  const std::map<std::string, double>& phases() const { return phases_; }
  const std::map<int, std::map<std::string, double>>& device_phases() const { return device_phases_; }
  void clear() {
    phases_.clear();
    device_phases_.clear();
  }

 private:
  std::map<std::string, double> phases_;
  std::map<int, std::map<std::string, double>> device_phases_;
};

}  // namespace knn
