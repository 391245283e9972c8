#pragma once
// ATOM's averaging round as a butterfly all-reduce split by bandwidth (docs/methods.md §4.4, as in hivemind): the
// vector is cut into one part per peer, each peer's part in proportion to its measured bandwidth; every peer sends
// each part to its owner, the owner sums its part over the peers in rank order (reduce-scatter), and sends the sum
// back to every peer (allgather). A peer with twice the bandwidth sums and sends out twice as much, so a slow link
// carries less of the round than the even split of a ring allreduce gives it. Every peer ends with the same bits,
// whatever the split: each element is summed by one owner, in rank order.
#include <cstdint>
#include <vector>

#include "parallel/comm/communicator.h"

namespace trident {

// Each peer's link bandwidth (bytes/s, one entry per rank of `peers`, the same on every peer), measured once:
// rounds of disjoint pairs (every pair once) exchange `probe_bytes` both ways; a pair's rate is the better of two
// timed exchanges after an untimed one (TCP connects on first use, then widens its window). A peer's bandwidth is
// the best rate it reached with a peer on another node (shared memory says nothing of the network). Empty when
// every peer is on one node. Collective.
std::vector<double> measure_peer_bandwidth(Communicator& peers, int64_t probe_bytes);

// Cuts `count` elements into one part per peer in proportion to `bandwidth` (each part at least 1 element when
// count allows, the parts summing to count).
std::vector<int64_t> butterfly_parts(const std::vector<double>& bandwidth, int64_t count);

// A sum runs in stripes of about `stripe_bytes` of the vector, each a butterfly of its own over a slice of every
// part: on a slow link a round is seconds of bytes, and a step's small collective (its loss sum) that the same TCP
// connection carries waits behind what is queued, so at most a stripe (84 ms of a MiB at 100 Mbit/s).
class ButterflyAllreduce {
 public:
  static constexpr int64_t kStripeBytes = int64_t{1} << 20;

  // parts: one entry per rank of `peers`, summing to the vector's length (butterfly_parts).
  ButterflyAllreduce(Communicator& peers, std::vector<int64_t> parts, int64_t stripe_bytes = kStripeBytes);

  // data (the parts' total, fp32) becomes its sum over the peers, in place. Collective over the peers.
  void sum(float* data);
  int64_t stripes() const { return stripes_; }
  // The bytes this peer sends in one sum: every part but its own out, and its summed part to every other peer.
  int64_t bytes_sent() const;
  const std::vector<int64_t>& parts() const { return parts_; }

 private:
  Communicator& peers_;
  std::vector<int64_t> parts_, offsets_;
  std::vector<float> received_;  // this peer's part from every peer, rank after rank
  int64_t stripes_ = 1;
};

}  // namespace trident
