#pragma once
// The one communication interface every strategy uses. Ranks are always relative to a communicator (a group),
// never global +-1. Implementations: MPI for host buffers (mpi_comm.cpp); NCCL for device buffers arrives with the
// CUDA backend. Sub-communicators are created once per distinct member set and cached (FlexSP regroups per step).
// Every call is counted (calls and bytes this rank sent) so benchmarks and metrics can report traffic.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/shared/bf16.h"

namespace trident {

// bf16 is for moving activations (sequence parallelism's messages); sums of bf16 are NCCL's only (MPI has no bf16
// arithmetic: an MPI sum of bf16 throws).
enum class CommType : uint8_t { f32, f64, i32, i64, u8, bf16 };
std::size_t comm_type_size(CommType type);
inline int64_t comm_bytes(int64_t count, CommType type) { return count * static_cast<int64_t>(comm_type_size(type)); }

template <class T> constexpr CommType comm_type_of();
template <> constexpr CommType comm_type_of<float>() { return CommType::f32; }
template <> constexpr CommType comm_type_of<double>() { return CommType::f64; }
template <> constexpr CommType comm_type_of<int32_t>() { return CommType::i32; }
template <> constexpr CommType comm_type_of<int64_t>() { return CommType::i64; }
template <> constexpr CommType comm_type_of<uint8_t>() { return CommType::u8; }
template <> constexpr CommType comm_type_of<bf16>() { return CommType::bf16; }

// Traffic of one communicator, from this rank's point of view.
struct CommCounters {
  struct Op {
    int64_t calls = 0;
    int64_t bytes = 0;  // bytes this rank handed to the operation (its send side): the whole send buffer for
                        // collectives, only the root's for broadcast, 0 for recv, irecv and barrier
    double seconds = 0;  // wall time inside the calls, waiting for peers included: MPI's all-to-alls (else 0)
  };
  std::map<std::string, Op> ops;  // "allreduce", "send", "alltoallv", ...
  void record(const std::string& op, int64_t bytes);  // one call of `op` that sent `bytes`
  // Seconds this rank spent in all-to-all calls (alltoall, alltoallv) where they are timed.
  double alltoall_seconds() const;
  int64_t total_bytes() const;
  int64_t total_calls() const;
};

// A pending non-blocking operation. wait() completes it; test() asks without blocking. Destroying an unfinished
// request waits for it (a buffer must not be freed under a transfer in flight).
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;
};
using RequestPtr = std::unique_ptr<Request>;

// Waits for every request in the list (null entries are skipped).
void wait_all(std::vector<RequestPtr>& requests);

// Throws RuntimeError unless `counts` and `displs` hold one non-negative entry per rank of a `size`-rank group (the
// layouts of allgatherv and alltoallv).
void check_per_rank_layout(const char* op, int size, const std::vector<int64_t>& counts,
                           const std::vector<int64_t>& displs);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The global ranks of this communicator's members, in group-rank order.
  virtual const std::vector<int>& members() const = 0;

  // Point to point (peer is a rank of this communicator).
  virtual void send(const void* data, int64_t count, CommType type, int peer, int tag) = 0;
  virtual void recv(void* data, int64_t count, CommType type, int peer, int tag) = 0;
  virtual RequestPtr isend(const void* data, int64_t count, CommType type, int peer, int tag) = 0;
  virtual RequestPtr irecv(void* data, int64_t count, CommType type, int peer, int tag) = 0;
  // Sends to `dest` and receives from `source` together: one step of a ring. Use it whenever a rank both sends and
  // receives before waiting: a device communicator runs its operations in order on one stream, so an isend
  // followed by an irecv around a ring would wait on each other forever.
  virtual RequestPtr isendrecv(const void* send_data, int64_t send_count, int dest, void* recv_data,
                               int64_t recv_count, int source, CommType type, int tag) = 0;

  // Whether a message from `peer` with `tag` has arrived, without receiving it (MPI_Iprobe): lets a thread poll
  // without leaving a receive pending. MPI only.
  virtual bool probe(int peer, int tag);

  // Collectives (every member calls them, in the same order).
  virtual void allreduce_sum(void* data, int64_t count, CommType type) = 0;  // in place
  virtual RequestPtr iallreduce_sum(void* data, int64_t count, CommType type) = 0;
  // Sums `in` (the sum of counts elements, on every rank) across the ranks and leaves rank r the sum of block r:
  // counts[r] elements from offset counts[0] + ... + counts[r-1] of `in`, written to `out` on rank r. `in` and `out`
  // may not overlap. Non-blocking.
  virtual RequestPtr ireduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts,
                                         CommType type) = 0;
  virtual void broadcast(void* data, int64_t count, CommType type, int root) = 0;
  // out holds size() * count elements; rank r's block lands at out + r * count.
  virtual void allgather(const void* in, void* out, int64_t count, CommType type) = 0;
  // counts[r] elements from rank r land at out + displs[r] (elements).
  virtual void allgatherv(const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                          const std::vector<int64_t>& displs, CommType type) = 0;
  // The same, non-blocking where the implementation has it (MPI); others complete it before returning (NCCL's is
  // already asynchronous on its stream).
  virtual RequestPtr iallgatherv(const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                                 const std::vector<int64_t>& displs, CommType type);
  // Block r of `in` (count elements) goes to rank r; block r of `out` comes from rank r.
  virtual void alltoall(const void* in, void* out, int64_t count, CommType type) = 0;
  virtual void alltoallv(const void* in, const std::vector<int64_t>& send_counts,
                         const std::vector<int64_t>& send_displs, void* out,
                         const std::vector<int64_t>& recv_counts, const std::vector<int64_t>& recv_displs,
                         CommType type) = 0;
  virtual void barrier() = 0;

  // The sub-communicator of the given ranks of this communicator (sorted, unique; the caller must be among them).
  // Created on first use collectively by its members only (MPI_Comm_create_group), then cached: asking again for
  // the same member set costs a map lookup.
  virtual Communicator* subgroup(const std::vector<int>& ranks) = 0;
  // Split by colour, as MPI_Comm_split; every member calls it. Created once per distinct partition, then cached
  // (asking again costs one small allgather). Ranks with colour < 0 get nullptr.
  virtual Communicator* split(int color, int key) = 0;
  // The members on this rank's node (the ranks with its host name), in rank order; every member calls it. Created on
  // first use, then cached. Picks a rank's device and keeps groups from straddling nodes.
  virtual Communicator* node_group() = 0;

  virtual const CommCounters& counters() const = 0;
  virtual void reset_counters() = 0;
};

// Runs `work` on this rank and agrees over `group` whether it succeeded everywhere: its own RuntimeError where it
// failed, a RuntimeError naming `what` ("write their shard") on the ranks where it did not but another did, so every
// rank ends the same way and none waits for a rank that gave up. Collective over `group`.
void on_all_or_none(Communicator& group, const std::string& what, const std::function<void()>& work);

// MPI: initialises MPI on first use (mpi_thread_multiple() below) and finalises it at exit. The world communicator of
// this process; a 1-rank world when the program was not started by mpirun/srun.
Communicator& world();

// Whether MPI lets any thread call it (MPI_THREAD_MULTIPLE, asked for at start-up): a background thread may then run
// collectives on a communicator of its own while the main thread computes and communicates (ATOM's averaging).
bool mpi_thread_multiple();

// For a rank that failed on its own: when it is one of several MPI ranks, ends the whole job with `exit_code`
// (MPI_Abort) and does not return. Returning from main instead would hang the job: MPI_Finalize waits for every
// rank, and the others wait in their next collective for this one. Does nothing in a 1-rank world or before MPI
// was initialised.
void abort_job_if_distributed(int exit_code);

}  // namespace trident
