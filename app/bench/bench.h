#pragma once
// Benchmarks: measured side by side in one run, printed as a table or JSON lines. Never used by tests.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>


namespace trident::bench {

struct Options {
  bool json = false;
  double min_seconds = 0.3;
  std::string blas;  // --blas: device.blas for the CPU's GEMMs; empty = the config's, or auto (gemm: every library)
};

// Calls fn repeatedly for at least `min_seconds` (after one warm-up call); returns seconds per call (median of runs).
double time_call(const std::function<void()>& fn, double min_seconds);

void run_gemm(const Options& options);
void run_kernels(const Options& options);
// The CUDA kernels against the CPU ones, timed on the first device, the cuBLAS roof and a GPT-2-small step estimate.
// Only in builds with CUDA (app/bench/kernels_cuda.cpp); the caller has checked that a device is usable.
void run_kernels_cuda(const Options& options);
// CONFIG may be empty: then GPT-2 small (12 layers, 768 wide, 12 heads, vocab 50304) and the quickstart shape.
void run_step(const Options& options, const std::string& config_path, const std::vector<std::string>& overrides);
struct CommOptions {
  int64_t max_bytes = int64_t{64} << 20;  // largest message of the sweep (4 B, 16 B, ... up to this)
  std::string profile;                    // write the cluster profile's network section here ("" = no)
  double device_memory_gb = 0;            // for a new profile's cluster section (0 = unknown)
};
// Under mpirun: communicator latency and bandwidth per group size, for groups on one node and across nodes (up to
// 20 calls per point, no more than fit in --repeat seconds on a slow link).
void run_comm(const Options& options, const CommOptions& comm_options);
// Under mpirun: sequence-parallel attention methods, one layer forward + backward per group size and length
// (app/bench/sp.cpp); with max_length_budget_gib > 0, the longest length per method that fits that per-rank budget.
void run_sp(const Options& options, const std::vector<int64_t>& lengths, double max_case_seconds,
            double max_length_budget_gib);

// The cost model's compute and memory coefficients for CONFIG's model on this machine, merged into the profile
// file `out` (app/bench/profile.cpp).
void run_profile(const Options& options, const std::string& config_path, const std::vector<std::string>& overrides,
                 const std::string& out);
}  // namespace trident::bench
