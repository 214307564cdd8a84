#pragma once
// Streams, events and the event-based PhaseTimer that reports GPU phases to the harness.
#include <cuda_runtime_api.h>

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda/error.hpp"
#include "core/cuda/pool.hpp"
#include "core/timing.hpp"

namespace knn::cuda {

// A non-blocking stream of the current device, from the pool.
class Stream {
 public:
  Stream() : device_(HandlePool::current_device()), s_(HandlePool::instance().take_stream()) {}
  ~Stream() {
    if (s_) HandlePool::instance().give(device_, s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  operator cudaStream_t() const { return s_; }
  void synchronize() const { KNN_CUDA_TRY(cudaStreamSynchronize(s_)); }

 private:
  int device_;
  cudaStream_t s_ = nullptr;
};

// A timing event of the current device, from the pool.
class Event {
 public:
  Event() : device_(HandlePool::current_device()), e_(HandlePool::instance().take_event()) {}
  ~Event() {
    if (e_) HandlePool::instance().give(device_, e_);
  }
  Event(Event&& o) noexcept : device_(o.device_), e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { KNN_CUDA_TRY(cudaEventRecord(e_, s)); }

 private:
  int device_;
  cudaEvent_t e_ = nullptr;
};

// Waits for a stream when its scope is left by an exception, and only then: buffers freed on another
// stream after it (declared before this) would otherwise be reused while its kernels still read them.
class JoinOnUnwind {
 public:
  explicit JoinOnUnwind(cudaStream_t s) : s_(s), pending_(std::uncaught_exceptions()) {}
  ~JoinOnUnwind() {
    if (std::uncaught_exceptions() > pending_) (void)cudaStreamSynchronize(s_);
  }
  JoinOnUnwind(const JoinOnUnwind&) = delete;
  JoinOnUnwind& operator=(const JoinOnUnwind&) = delete;

 private:
  cudaStream_t s_;
  int pending_;
};

// Milliseconds between two recorded events (both done).
inline double elapsed_ms(const Event& from, const Event& to) {
  float ms = 0.f;
  KNN_CUDA_TRY(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return double(ms);
}

// Times phases of GPU work with events on one stream, and hands the elapsed times to the
// harness's sink once the stream is synchronised:
//   PhaseTimer t(stream);
//   t.begin("h2d"); copies...; t.end();
//   t.begin("kernel"); launches...; t.end();
//   stream.synchronize(); t.report(ctx.timing);            // or report_device(ctx.timing, dev)
class PhaseTimer {
 public:
  explicit PhaseTimer(cudaStream_t stream) : stream_(stream) {}
  void begin(std::string phase) {
    marks_.push_back({std::move(phase), Event{}, Event{}});
    marks_.back().start.record(stream_);
  }
  void end() { marks_.back().stop.record(stream_); }
  // Call after the stream has been synchronised.
  void report(TimingSink& sink, int device = -1) {
    for (auto& m : marks_) {
      float ms = 0.f;
      KNN_CUDA_TRY(cudaEventElapsedTime(&ms, m.start.get(), m.stop.get()));
      if (device < 0)
        sink.add(m.phase, ms);
      else
        sink.add_device(device, m.phase, ms);
    }
    marks_.clear();
  }

 private:
  struct Mark {
    std::string phase;
    Event start, stop;
  };
  cudaStream_t stream_;
  std::vector<Mark> marks_;
};

}  // namespace knn::cuda
