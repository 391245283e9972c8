#include "app/train/signals.h"

#include <atomic>
#include <csignal>

namespace trident {

namespace {
std::atomic<int> g_stop_signal{0};  // written by the handler: a lock-free atomic is async-signal-safe
void on_stop_signal(int signal) { g_stop_signal.store(signal); }
}  // namespace

void install_stop_signal_handlers() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking I/O and MPI calls resume; the loop checks the flag between steps
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGUSR1, &action, nullptr);
}

int stop_signal() { return g_stop_signal.load(); }

}  // namespace trident
