// The stop signals (SIGTERM, SIGUSR1) are taken on a thread of their own, never by a handler on a thread that
// computes: oneDNN 2.6's sgemm corrupts the heap when a handler runs on its thread mid-call.
// Each TEST_CASE runs in a process of its own (ctest), so each installs the signals before any thread starts, as
// `trident train` does.
#include <omp.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "app/train/signals.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/gemm.h"

using namespace trident;

namespace {

// Whether the calling thread blocks both stop signals.
bool stops_blocked_here() {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGUSR1) == 1;
}

// Polls stop_signal() for up to 10 s.
int wait_for_stop_signal() {
  for (int i = 0; i < 1000 && stop_signal() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return stop_signal();
}

}  // namespace

TEST_CASE("stop signals are blocked on every thread started after install and still recorded", "[app][signals]") {
  install_stop_signal_handlers();
  install_stop_signal_handlers();  // once: a second call changes nothing
  CHECK(stop_signal() == 0);
  std::vector<int> blocked(static_cast<size_t>(omp_get_max_threads()), 0);
#pragma omp parallel
  blocked[static_cast<size_t>(omp_get_thread_num())] = stops_blocked_here();
  for (size_t t = 0; t < blocked.size(); ++t) CHECK(blocked[t] == 1);
  bool worker_blocked = false;
  std::thread([&] { worker_blocked = stops_blocked_here(); }).join();
  CHECK(worker_blocked);
  REQUIRE(kill(getpid(), SIGTERM) == 0);  // to the process, as Slurm and mpirun send it: recorded, not fatal
  CHECK(wait_for_stop_signal() == SIGTERM);
}

TEST_CASE("stop signals arriving without pause leave oneDNN's GEMMs exact and its heap intact", "[app][signals]") {
  install_stop_signal_handlers();
  if (!cpu::blas_loading_supported()) {
    WARN("not run: this build loads no BLAS library with dlopen (sanitizer build)");
    return;
  }
  cpu::use_blas("onednn");  // scripts/install-deps.sh installs it
  // A tile shape of GPT-2 small's step: with a handler on the computing thread every 10 us, this aborted on a
  // corrupted heap within a few hundred calls.
  const int64_t M = 256, N = 288, K = 768;
  std::vector<float> A(M * K), B(K * N), C(M * N), expected(M * N);
  for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(i % 13) * 0.125f - 0.75f;
  for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
  cpu::gemm(Trans::no, Trans::no, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, expected.data(), N);
  std::atomic<bool> done{false};
  // A corrupted heap can also hang (a malloc lock): then the process fails after 60 s instead of ctest's timeout.
  std::thread watchdog([&] {
    for (int i = 0; i < 6000 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (done) return;
    std::fprintf(stderr, "400 GEMMs under stop signals did not finish in 60 s\n");
    std::_Exit(1);
  });
  std::thread sender([&] {
    while (!done) {
      kill(getpid(), SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
  });
  int wrong = 0;
  for (int call = 0; call < 400; ++call) {
    cpu::gemm(Trans::no, Trans::no, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N);
    wrong += std::memcmp(C.data(), expected.data(), C.size() * sizeof(float)) != 0;
    std::vector<char> heap_traffic(static_cast<size_t>(1000 + call * 7));  // a corrupted heap aborts here
  }
  done = true;
  sender.join();
  watchdog.join();
  CHECK(wrong == 0);
  CHECK(wait_for_stop_signal() == SIGUSR1);
  cpu::use_blas("openblas-debian");
}
