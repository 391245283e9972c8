#pragma once
// The communicators of a run, made together at start-up (collective over the world) and kept for its lifetime, so
// a step that switches strategy or group size creates nothing:
//   - the world, and where gradients are summed (the world itself on the CPU, its NCCL twin on the GPU);
//   - for each sequence-parallel degree d, this rank's group of d consecutive ranks in node-major order (a group
//     stays on one node whenever d divides each node's rank count), with an NCCL twin on the GPU for the methods
//     that move activations.
// The traffic of a step is the sum of their counters (bytes_sent).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "parallel/comm/communicator.h"

namespace trident {

class RunGroups {
 public:
  // A communicator over `host`'s members for buffers in the backend's memory (NCCL on the GPU; collective over
  // `host`), or nullptr when `host` itself takes them (the CPU backend).
  using DeviceCommFactory = std::function<std::unique_ptr<Communicator>(Communicator& host)>;

  struct RankGroup {
    Communicator* host = nullptr;    // MPI: host buffers (LASP's states, counts)
    Communicator* device = nullptr;  // the backend's buffers (activations): NCCL on the GPU, `host` on the CPU
    int replica = 0;                 // which group this rank is in (0 .. replicas - 1)
    int replicas = 1;                // world / d
  };

  // Every degree must divide the world; degree 1 (this rank alone) is always made. Collective over world.
  RunGroups(Communicator& world, const DeviceCommFactory& device_comm, const std::vector<int>& degrees);
  ~RunGroups();

  Communicator& world() { return world_; }
  int64_t world_size() const { return world_.size(); }
  Communicator& gradients() { return device_world_ ? *device_world_ : world_; }
  // The group of `degree` holding this rank; a degree not made at start-up is an internal error.
  const RankGroup& group(int degree) const;
  std::vector<int> degrees() const;
  // This rank's index in node-major order: device `position()` of the planners' numbering (groups of d are the
  // positions [k d, (k + 1) d)).
  int position() const { return position_; }
  // Ranks per node when every node holds as many (else 0), and the nodes.
  int ranks_per_node() const { return ranks_per_node_; }
  int nodes() const { return nodes_; }
  // Bytes this rank has sent on every communicator of the run, since the start.
  int64_t bytes_sent() const;
  // Seconds this rank has spent in all-to-alls on every communicator (MPI's; NCCL's run on the stream, untimed).
  double alltoall_seconds() const;

 private:
  Communicator& world_;
  std::unique_ptr<Communicator> device_world_;
  std::map<int, RankGroup> groups_;
  std::vector<std::unique_ptr<Communicator>> device_groups_;
  int ranks_per_node_ = 0, nodes_ = 1, position_ = 0;
};

}  // namespace trident
