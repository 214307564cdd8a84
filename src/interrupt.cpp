#include "interrupt.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>

namespace knn {
namespace {

std::atomic<int> g_signals{0};

extern "C" void on_signal(int sig) {
  if (g_signals.fetch_add(1) >= 1) {
    // Second interrupt: leave at once. The results file on disk is already valid JSON.
    const char msg[] = "\nknnbench: interrupted again, exiting now\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    std::_Exit(128 + sig);
  }
  const char msg[] = "\nknnbench: interrupted; finishing the call in flight and saving results (Ctrl-C again to quit now)\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
}

}  // namespace

bool stop_requested() { return g_signals.load() > 0; }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace knn
