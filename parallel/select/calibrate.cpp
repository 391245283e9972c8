#include "parallel/select/calibrate.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include <fmt/core.h>

#include "kernels/common/error.h"
#include "parallel/cost/fit.h"

namespace trident {

namespace {

using clock_type = std::chrono::steady_clock;

// The fastest of `repeats` rounds of `work` (after one warm-up), each started together by a barrier.
template <class Work>
double fastest_round(Communicator& comm, int repeats, Work work) {
  work();
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    comm.barrier();
    const auto start = clock_type::now();
    work();
    best = std::min(best, std::chrono::duration<double>(clock_type::now() - start).count());
  }
  return best;
}

// Seconds a call of `work` takes when every rank repeats it for `window_s` (at least 3 calls, after one warm-up, all
// started together): the mean over the window, so the rank's share of a core shared with other ranks counts as it
// does in training. The fastest of a few calls fits a short one into a time slice the rank has alone and a long one
// not, which makes short documents look cheaper beside long ones than any step finds them. Every rank makes as many
// calls (until the last rank's window ends): a pass of parallel.zero.stage 3 is collective over the ranks.
template <class Work>
double sustained_call_s(Communicator& comm, double window_s, Work work) {
  work();
  comm.barrier();
  const auto start = clock_type::now();
  int calls = 0;
  double elapsed = 0;
  int32_t more = 0;
  do {
    work();
    ++calls;
    elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
    more = calls < 3 || elapsed < window_s;
    comm.allreduce_sum(&more, 1, CommType::i32);
  } while (more > 0);
  return elapsed / calls;
}

// Forward + backward of one document of s random tokens.
double time_document(GPT& model, Communicator& world, int64_t s) {
  const ModelConfig& m = model.config();
  std::mt19937_64 rng(static_cast<uint64_t>(s));
  std::vector<int32_t> tokens(s), targets(s), positions(s), cu_seqlens = {0, static_cast<int32_t>(s)};
  for (int64_t t = 0; t < s; ++t) {
    tokens[t] = static_cast<int32_t>(rng() % static_cast<uint64_t>(m.vocab_size));
    positions[t] = static_cast<int32_t>(t);
  }
  for (int64_t t = 0; t < s; ++t) targets[t] = tokens[(t + 1) % s];
  const TokenBatch batch{tokens.data(), targets.data(), positions.data(), cu_seqlens.data(), s, 1};
  const double seconds =
      sustained_call_s(world, 0.1, [&] { model.forward_backward(batch, 1.0f / static_cast<float>(s)); });
  model.zero_grads();
  return seconds;
}

// An all-to-all of `per_rank` floats from each rank (per_rank / size to each peer) on `data`, the communicator
// the step's activations travel on (NCCL on the GPU, with buffers in the backend's memory; MPI on the CPU), each
// round started by a barrier on `host`: latency and bandwidth from a small and a large one.
cost::Link measure_link(Communicator& host, Communicator& data, Backend& backend) {
  const int64_t d = data.size();
  const int64_t large_per_peer = (4 << 20) / 4 / d;  // 4 MiB a rank: beyond a token bucket's burst
  const std::vector<float> ones(static_cast<std::size_t>(large_per_peer * d), 1.0f);
  BackendArray<float> in(backend), out(backend);
  in.upload(ones.data(), large_per_peer * d);
  float* out_data = out.data(large_per_peer * d);
  auto alltoall_s = [&](int64_t per_peer) {  // a blocking all-to-all has finished on the device when it returns
    return fastest_round(host, 5, [&] { data.alltoall(in.data(), out_data, per_peer, CommType::f32); });
  };
  const double small = alltoall_s(1), large = alltoall_s(large_per_peer);
  const double bytes = static_cast<double>(large_per_peer * d * 4);
  return {bytes / std::max(large - small, 1e-9) / 1e9, small * 1e6};
}

}  // namespace

cost::Profile measure_run_profile(GPT& model, RunGroups& groups, const Config& config, int64_t capacity) {
  Communicator& world = groups.world();
  const int64_t longest = std::min(config.model.max_seq_len, capacity);
  if (longest < 12)
    throw_config_error("parallel.strategy: auto measures the model at three or more document lengths up to "
                       "model.max_seq_len within the activation capacity, but that is {} tokens (raise "
                       "device.memory_gb or give parallel.select.profile)",
                       longest);
  // Halving down to 16 tokens (a quarter of the longest when that is shorter), as `trident bench profile` does.
  const std::vector<int64_t> lengths = cost::halving_lengths(longest, std::min<int64_t>(16, longest / 4), 8);
  std::vector<cost::Timing> timings;
  for (int64_t s : lengths) timings.push_back({s, 1, time_document(model, world, s)});
  cost::Profile p;
  p.source = "the profile measured at start-up";
  p.compute = cost::fit_compute(timings);
  p.compute->fitted_from = fmt::format("start-up: forward+backward of one document of {}..{} tokens ({} lengths), "
                                       "{} rank(s)", lengths.front(), lengths.back(), lengths.size(), world.size());

  const int per_node = groups.ranks_per_node() > 0 ? groups.ranks_per_node() : world.size();
  cost::NetworkSection network;
  std::optional<cost::Link> intra, inter;
  std::vector<int> degrees = groups.degrees();
  if (std::find(degrees.begin(), degrees.end(), world.size()) == degrees.end()) degrees.push_back(world.size());
  for (int d : degrees) {
    if (d < 2) continue;
    const bool whole = d == world.size();
    Communicator& host = whole ? world : *groups.group(d).host;
    Communicator& data = whole ? groups.gradients() : *groups.group(d).device;
    const int64_t nodes = (d + per_node - 1) / per_node;
    const cost::Link link = measure_link(host, data, model.backend());
    network.alltoall.push_back({d, nodes, link});
    (nodes == 1 ? intra : inter) = link;  // degrees ascend: the largest of each kind stays
  }
  if (!intra && !inter) intra = inter = cost::Link{1e3, 0};  // one rank: nothing is ever sent
  network.intra_node = intra ? *intra : *inter;
  network.inter_node = inter ? *inter : *intra;
  p.network = network;
  p.cluster = cost::ClusterSection{"this run", groups.nodes(), per_node, config.device.memory_gb};
  p.model = cost::ModelSection{config.run.name, config.model.n_layer, config.model.n_embd,
                               activation_value_bytes(precision_named(config.train.precision))};
  return p;
}

std::string describe_links(const cost::NetworkSection& network) {
  std::string out;
  for (const cost::AlltoallLink& a : network.alltoall)
    out += fmt::format("{}{} ranks on {} node(s): {:.3g} GB/s, {:.0f} us", out.empty() ? "" : "; ", a.group_size,
                       a.nodes, a.link.bandwidth_gb_per_s, a.link.latency_us);
  return out.empty() ? "no links: one rank" : out;
}

}  // namespace trident
