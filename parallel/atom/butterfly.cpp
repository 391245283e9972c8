#include "parallel/atom/butterfly.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "kernels/common/error.h"

namespace trident {

namespace {

// The circle method: over the rounds 0..n-2 of an even n, every pair meets once; rank n-1 stays put, the others
// rotate. n is the peer count rounded up to even; a partner >= the peer count is the odd one's rest.
int partner_in_round(int rank, int round, int n) {
  if (rank == n - 1) return round;
  if (rank == round) return n - 1;
  return ((2 * round - rank) % (n - 1) + (n - 1)) % (n - 1);
}

// Seconds of one exchange of `bytes` both ways with `peer`.
double exchange_s(Communicator& peers, int peer, std::vector<uint8_t>& out, std::vector<uint8_t>& in) {
  const auto begin = std::chrono::steady_clock::now();
  const auto n = static_cast<int64_t>(out.size());
  peers.isendrecv(out.data(), n, peer, in.data(), n, peer, CommType::u8, /*tag=*/41)->wait();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

}  // namespace

std::vector<double> measure_peer_bandwidth(Communicator& peers, int64_t probe_bytes) {
  const int W = peers.size(), me = peers.rank();
  TRIDENT_CHECK(probe_bytes > 0, "a bandwidth probe of {} bytes", probe_bytes);
  const std::vector<int>& node = peers.node_group()->members();  // global ranks on this peer's node
  auto on_my_node = [&](int peer) {
    return std::find(node.begin(), node.end(), peers.members()[static_cast<std::size_t>(peer)]) != node.end();
  };
  bool all_local = true;
  for (int peer = 0; peer < W; ++peer) all_local = all_local && on_my_node(peer);
  if (all_local) return {};  // shared memory: nothing of a network to measure
  std::vector<uint8_t> out(static_cast<std::size_t>(probe_bytes), 1), in(out.size());
  double network = 0, any = 0;  // best rates: with peers on other nodes, with any peer
  const int n = W + W % 2;
  for (int round = 0; round < n - 1; ++round) {
    const int peer = partner_in_round(me, round, n);
    if (peer >= W) continue;
    exchange_s(peers, peer, out, in);  // opens the connection (TCP connects on first use) and its window
    const double seconds = std::min(exchange_s(peers, peer, out, in), exchange_s(peers, peer, out, in));
    const double rate = static_cast<double>(probe_bytes) / std::max(seconds, 1e-9);
    any = std::max(any, rate);
    if (!on_my_node(peer)) network = std::max(network, rate);
  }
  double mine = network > 0 ? network : any;
  std::vector<double> bandwidth(static_cast<std::size_t>(W));
  peers.allgather(&mine, bandwidth.data(), 1, CommType::f64);
  return bandwidth;
}

std::vector<int64_t> butterfly_parts(const std::vector<double>& bandwidth, int64_t count) {
  TRIDENT_CHECK(!bandwidth.empty() && count >= 0, "butterfly parts of {} elements over {} peers", count,
                bandwidth.size());
  std::vector<double> share(bandwidth.size());
  for (std::size_t r = 0; r < share.size(); ++r)
    share[r] = std::isfinite(bandwidth[r]) && bandwidth[r] > 0 ? bandwidth[r] : 0.0;
  double total = std::reduce(share.begin(), share.end());
  if (total <= 0) {  // nothing measured: even parts
    std::fill(share.begin(), share.end(), 1.0);
    total = static_cast<double>(share.size());
  }
  std::vector<int64_t> parts(share.size());
  double cumulative = 0;
  int64_t cut = 0;
  for (std::size_t r = 0; r < share.size(); ++r) {  // cumulative rounding: the parts sum to count exactly
    cumulative += share[r];
    const int64_t next = r + 1 == share.size() ? count
                                                : std::llround(static_cast<double>(count) * cumulative / total);
    parts[r] = next - cut;
    cut = next;
  }
  return parts;
}

ButterflyAllreduce::ButterflyAllreduce(Communicator& peers, std::vector<int64_t> parts, int64_t stripe_bytes)
    : peers_(peers), parts_(std::move(parts)), offsets_(parts_.size()) {
  TRIDENT_CHECK(parts_.size() == static_cast<std::size_t>(peers.size()), "{} butterfly parts for {} peers",
                parts_.size(), peers.size());
  TRIDENT_CHECK(stripe_bytes > 0, "butterfly stripes of {} bytes", stripe_bytes);
  std::exclusive_scan(parts_.begin(), parts_.end(), offsets_.begin(), int64_t{0});
  received_.resize(static_cast<std::size_t>(parts_[static_cast<std::size_t>(peers.rank())] * peers.size()));
  const int64_t total = std::reduce(parts_.begin(), parts_.end());
  stripes_ = std::max<int64_t>(1, (comm_bytes(total, CommType::f32) + stripe_bytes - 1) / stripe_bytes);
}

void ButterflyAllreduce::sum(float* data) {
  const int W = peers_.size(), me = peers_.rank();
  const int64_t mine = parts_[static_cast<std::size_t>(me)];
  // Stripe k takes the k-th of `stripes_` slices of every part: the same elements summed by the same owner in the
  // same order as one stripe would, so the bits do not depend on the striping.
  auto slice_begin = [&](int r, int64_t k) { return parts_[static_cast<std::size_t>(r)] * k / stripes_; };
  std::vector<int64_t> counts(static_cast<std::size_t>(W)), displs(counts.size()), from_each(counts.size()),
      at(counts.size());
  for (int64_t k = 0; k < stripes_; ++k) {
    for (int r = 0; r < W; ++r) {
      const auto i = static_cast<std::size_t>(r);
      counts[i] = slice_begin(r, k + 1) - slice_begin(r, k);
      displs[i] = offsets_[i] + slice_begin(r, k);
    }
    const int64_t first = slice_begin(me, k), n = counts[static_cast<std::size_t>(me)];
    for (int r = 0; r < W; ++r) {
      from_each[static_cast<std::size_t>(r)] = n;
      at[static_cast<std::size_t>(r)] = r * mine + first;
    }
    peers_.alltoallv(data, counts, displs, received_.data(), from_each, at, CommType::f32);
    for (int64_t i = first; i < first + n; ++i) {  // in rank order; the sum goes where rank 0's copy was
      float total = received_[static_cast<std::size_t>(i)];
      for (int r = 1; r < W; ++r) total += received_[static_cast<std::size_t>(r * mine + i)];
      received_[static_cast<std::size_t>(i)] = total;
    }
    peers_.allgatherv(received_.data() + first, n, data, counts, displs, CommType::f32);
  }
}

int64_t ButterflyAllreduce::bytes_sent() const {
  const int W = peers_.size();
  const int64_t total = std::reduce(parts_.begin(), parts_.end());
  const int64_t mine = parts_[static_cast<std::size_t>(peers_.rank())];
  return comm_bytes(total - mine + (W - 1) * mine, CommType::f32);
}

}  // namespace trident
