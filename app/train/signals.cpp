#include "app/train/signals.h"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <mutex>
#include <thread>

namespace trident {

namespace {
// Written by the signals' thread, or by the handler (a lock-free atomic is async-signal-safe).
std::atomic<int> g_stop_signal{0};
void on_stop_signal(int signal) { g_stop_signal.store(signal); }
}  // namespace

void install_stop_signal_handlers() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGUSR1);
    // For threads started before this call, which still take the signals: the handler only records them.
    struct sigaction action = {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // blocking I/O and MPI calls resume; the loop checks the flag between steps
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGUSR1, &action, nullptr);
    // Blocked here and in every thread started from here on; the waiting thread (which inherits the block, as
    // sigwait needs) takes them synchronously.
    pthread_sigmask(SIG_BLOCK, &stops, nullptr);
    std::thread([stops] {
      int signal = 0;
      while (sigwait(&stops, &signal) == 0) g_stop_signal.store(signal);
    }).detach();
  });
}

int stop_signal() { return g_stop_signal.load(); }

}  // namespace trident
