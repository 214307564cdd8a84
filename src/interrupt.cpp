#include "interrupt.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>

namespace knn {
namespace {

std::atomic<int> g_signals{0};
std::atomic<int> g_first_signal{0};

// SIGTERM's grace period is over: the call in flight did not finish. Every finished result is on
// disk already; leave as a terminated process does.
extern "C" void on_grace_over(int) {
  const char msg[] = "\nknnbench: terminated: the call in flight did not finish within the grace period; finished results are saved\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
  std::_Exit(128 + SIGTERM);
}

extern "C" void on_signal(int sig) {
  int none = 0;
  g_first_signal.compare_exchange_strong(none, sig);
  if (sig == SIGTERM) {
    // `timeout` and schedulers send SIGTERM and expect an end: the call in flight gets a grace
    // period, then the process exits 143 (on_grace_over).
    struct sigaction sa {};
    sa.sa_handler = on_grace_over;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, nullptr);
    alarm(kTermGraceSeconds);
  }
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

int stop_signal() { return g_first_signal.load(); }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace knn
