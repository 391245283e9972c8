#pragma once
// SIMT emulation (cuda_runtime.h here): the NCCL calls parallel/comm/nccl_comm.cpp makes, over MPI, so the CUDA
// backend's multi-rank paths run in CI with several processes on the emulated device (tests/parallel/simt/).
//
// As on a GPU, an operation is issued on a stream and runs on its own, whether or not the issuing rank waits for it:
// when it is issued, the stream's earlier work runs (with the emulation's deferred streams, that is where a missing
// event wait shows: without one, the buffers are read before the kernels that write them have run), then the
// operation goes to the process's NCCL engine, a thread that runs every communicator's MPI calls one operation at a
// time in issue order (Engine, below); the stream's later work, and an event recorded after it, wait for it to
// finish. The engine lets ranks reach their collectives at different moments of their host code, as NCCL's kernels
// do; running one operation at a time makes two communicators' operations issued in different orders on two ranks
// hang, as NCCL warns they may on a GPU, and the engine reports it. Needs MPI_THREAD_MULTIPLE.
//
// ncclCommInitRank builds the MPI communicator of the members from the unique id without a collective over the
// world: each member sends its world rank to rank 0's process, which answers with the member list. Sums of bf16
// are done in fp32 and rounded once. Errors abort: the emulation has no failing peers to report.
#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/shared/bf16.h"

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7
} ncclResult_t;
typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9
} ncclDataType_t;
typedef enum { ncclSum = 0 } ncclRedOp_t;
struct ncclUniqueId {
  char internal[128];
};

namespace trident::simt::nccl {

[[noreturn]] inline void die(const char* what, int rc) {
  std::fprintf(stderr, "SIMT NCCL emulation: %s failed (%d)\n", what, rc);
  std::abort();
}
inline void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) die(what, rc);
}

inline MPI_Datatype mpi_type(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return MPI_INT8_T;
    case ncclUint8: return MPI_UINT8_T;
    case ncclInt32: return MPI_INT32_T;
    case ncclUint32: return MPI_UINT32_T;
    case ncclInt64: return MPI_INT64_T;
    case ncclUint64: return MPI_UINT64_T;
    case ncclFloat32: return MPI_FLOAT;
    case ncclFloat64: return MPI_DOUBLE;
    case ncclFloat16:
    case ncclBfloat16: return MPI_UINT16_T;  // moved as bits; summed through fp32 (below)
  }
  die("an unknown ncclDataType_t", int(t));
}
inline int type_size(ncclDataType_t t) {
  int size = 0;
  MPI_Type_size(mpi_type(t), &size);
  return size;
}
inline int mpi_count(std::size_t count) {
  if (count > std::size_t(1) << 30) die("a count beyond the emulation's int range", 0);
  return static_cast<int>(count);
}

// The process's one NCCL engine: a thread that runs every communicator's operations, one at a time, in issue order,
// as a GPU runs the NCCL kernels queued on it. So two ranks that issue operations of two communicators in different
// orders wait for each other forever, as NCCL documents they may on a GPU; an operation that waits longer than
// TRIDENT_SIMT_NCCL_STALL_S seconds (default 120) is reported and the process aborts, instead of a silent hang.
class Engine {
 public:
  static Engine& get() {
    static Engine engine;
    return engine;
  }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    ready_.notify_all();
    worker_.join();
    watchdog_.join();
  }
  // Runs `op` after every operation issued before it; returns when it has been queued.
  std::shared_future<void> submit(std::function<void()> op, const char* what) {
    auto done = std::make_shared<std::promise<void>>();
    std::shared_future<void> finished = done->get_future().share();
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back({[op = std::move(op), done] {
                          op();
                          done->set_value();
                        },
                        what});
    }
    ready_.notify_all();
    return finished;
  }

 private:
  struct Item {
    std::function<void()> run;
    const char* what;
  };
  Engine() : stall_s_(stall_limit()), worker_([this] { run(); }), watchdog_([this] { watch(); }) {}
  static double stall_limit() {
    const char* s = std::getenv("TRIDENT_SIMT_NCCL_STALL_S");
    return s != nullptr ? std::atof(s) : 120.0;
  }
  void run() {
    for (;;) {
      Item item;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        item = std::move(queue_.front());
        queue_.pop_front();
        running_ = item.what;
        started_ = std::chrono::steady_clock::now();
      }
      item.run();
      const std::lock_guard<std::mutex> lock(mutex_);
      running_ = nullptr;
    }
  }
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      ready_.wait_for(lock, std::chrono::milliseconds(200));
      if (running_ != nullptr &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() > stall_s_) {
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        std::fprintf(stderr,
                     "SIMT NCCL emulation: rank %d has waited %.0f s in %s (queued behind it: %zu): do the ranks "
                     "issue operations of two communicators in different orders?\n",
                     rank, stall_s_, running_, queue_.size());
        std::abort();
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Item> queue_;
  bool stop_ = false;
  const char* running_ = nullptr;
  std::chrono::steady_clock::time_point started_;
  double stall_s_;
  std::thread worker_, watchdog_;  // last: they start once the rest is built
};

// One communicator: its MPI communicator; its operations run on the engine.
class Comm {
 public:
  Comm(MPI_Comm mpi, int rank, int size) : mpi_(mpi), rank_(rank), size_(size) {}
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm() {
    if (last_.valid()) last_.wait();  // its operations are done before its MPI communicator goes
    MPI_Comm_free(&mpi_);
  }
  MPI_Comm mpi() const { return mpi_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Issues `op` on `stream` (see the header comment).
  void issue(cudaStream_t stream, std::function<void()> op, const char* what) {
    if (stream != nullptr) trident::simt::drain(stream, stream->issued);
    std::shared_future<void> finished = Engine::get().submit(std::move(op), what);
    last_ = finished;
    trident::simt::enqueue(stream, [finished] { finished.wait(); });
  }

 private:
  MPI_Comm mpi_;
  int rank_, size_;
  std::shared_future<void> last_;
};

// Point-to-point calls between ncclGroupStart and ncclGroupEnd, issued together at the end.
struct P2p {
  bool send;
  void* buffer;
  std::size_t count;
  ncclDataType_t type;
  int peer;
  Comm* comm;
  cudaStream_t stream;
};
struct GroupState {
  int depth = 0;
  std::vector<P2p> calls;
};
inline GroupState& group() {
  thread_local GroupState g;
  return g;
}
// The calls of one group, on their communicator: every send and receive posted, then all waited for.
inline void issue_p2p(std::vector<P2p> calls) {
  if (calls.empty()) return;
  Comm* comm = calls.front().comm;
  comm->issue(calls.front().stream, [calls, comm] {
    std::vector<MPI_Request> requests(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const P2p& c = calls[i];
      const int rc = c.send ? MPI_Isend(c.buffer, mpi_count(c.count), mpi_type(c.type), c.peer, 0, comm->mpi(),
                                        &requests[i])
                            : MPI_Irecv(c.buffer, mpi_count(c.count), mpi_type(c.type), c.peer, 0, comm->mpi(),
                                        &requests[i]);
      check(rc, c.send ? "MPI_Isend" : "MPI_Irecv");
    }
    check(MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }, "a group of sends and receives");
}

struct Id {
  int root_world_rank;
  int tag;
};

}  // namespace trident::simt::nccl

struct ncclComm {
  std::unique_ptr<trident::simt::nccl::Comm> impl;
};
typedef ncclComm* ncclComm_t;

inline const char* ncclGetErrorString(ncclResult_t rc) {
  return rc == ncclSuccess ? "no error" : "error (SIMT NCCL emulation)";
}
inline const char* ncclGetLastError(ncclComm_t) { return ""; }

inline ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static int made = 0;
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  // Unique among every rank's ids: this process's count of ids, interleaved with its world rank.
  const trident::simt::nccl::Id mine{world_rank, 1000 + (++made) * world_size + world_rank};
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, &mine, sizeof mine);
  return ncclSuccess;
}

inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  using namespace trident::simt::nccl;
  Id root{};
  std::memcpy(&root, id.internal, sizeof root);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::vector<int> members(static_cast<std::size_t>(nranks));
  if (rank == 0) {
    members[0] = world_rank;
    for (int i = 1; i < nranks; ++i) {
      int pair[2];  // (rank in the new communicator, world rank)
      check(MPI_Recv(pair, 2, MPI_INT, MPI_ANY_SOURCE, root.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      members[static_cast<std::size_t>(pair[0])] = pair[1];
    }
    for (int i = 1; i < nranks; ++i)
      check(MPI_Send(members.data(), nranks, MPI_INT, members[static_cast<std::size_t>(i)], root.tag, MPI_COMM_WORLD),
            "MPI_Send");
  } else {
    const int pair[2] = {rank, world_rank};
    check(MPI_Send(pair, 2, MPI_INT, root.root_world_rank, root.tag, MPI_COMM_WORLD), "MPI_Send");
    check(MPI_Recv(members.data(), nranks, MPI_INT, root.root_world_rank, root.tag, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE),
          "MPI_Recv");
  }
  MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  MPI_Comm mpi = MPI_COMM_NULL;
  check(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group");
  check(MPI_Group_incl(world_group, nranks, members.data(), &group), "MPI_Group_incl");
  check(MPI_Comm_create_group(MPI_COMM_WORLD, group, root.tag, &mpi), "MPI_Comm_create_group");
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  *comm = new ncclComm{std::make_unique<Comm>(mpi, rank, nranks)};
  return ncclSuccess;
}
inline ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}
inline ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }
inline ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* error) {
  *error = ncclSuccess;
  return ncclSuccess;
}

inline ncclResult_t ncclGroupStart() {
  ++trident::simt::nccl::group().depth;
  return ncclSuccess;
}
inline ncclResult_t ncclGroupEnd() {
  trident::simt::nccl::GroupState& g = trident::simt::nccl::group();
  if (g.depth == 0) return ncclInvalidUsage;
  if (--g.depth == 0) trident::simt::nccl::issue_p2p(std::move(g.calls)), g.calls.clear();
  return ncclSuccess;
}
inline ncclResult_t ncclSend(const void* buffer, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                             cudaStream_t stream) {
  trident::simt::nccl::GroupState& g = trident::simt::nccl::group();
  g.calls.push_back({true, const_cast<void*>(buffer), count, type, peer, comm->impl.get(), stream});
  if (g.depth == 0) trident::simt::nccl::issue_p2p(std::move(g.calls)), g.calls.clear();
  return ncclSuccess;
}
inline ncclResult_t ncclRecv(void* buffer, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                             cudaStream_t stream) {
  trident::simt::nccl::GroupState& g = trident::simt::nccl::group();
  g.calls.push_back({false, buffer, count, type, peer, comm->impl.get(), stream});
  if (g.depth == 0) trident::simt::nccl::issue_p2p(std::move(g.calls)), g.calls.clear();
  return ncclSuccess;
}

inline ncclResult_t ncclAllReduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t,
                                  ncclComm_t comm, cudaStream_t stream) {
  using namespace trident::simt::nccl;
  Comm* c = comm->impl.get();
  c->issue(stream, [=] {
    if (type == ncclBfloat16) {  // fp32 sums, rounded once
      std::vector<float> wide(count);
      const auto* in = static_cast<const trident::bf16*>(send);
      for (std::size_t i = 0; i < count; ++i) wide[i] = trident::bf16_to_float(in[i]);
      check(MPI_Allreduce(MPI_IN_PLACE, wide.data(), mpi_count(count), MPI_FLOAT, MPI_SUM, c->mpi()), "MPI_Allreduce");
      auto* out = static_cast<trident::bf16*>(recv);
      for (std::size_t i = 0; i < count; ++i) out[i] = trident::float_to_bf16(wide[i]);
      return;
    }
    if (send != recv) std::memcpy(recv, send, count * std::size_t(type_size(type)));
    check(MPI_Allreduce(MPI_IN_PLACE, recv, mpi_count(count), mpi_type(type), MPI_SUM, c->mpi()), "MPI_Allreduce");
  }, "ncclAllReduce");
  return ncclSuccess;
}
inline ncclResult_t ncclReduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t,
                               int root, ncclComm_t comm, cudaStream_t stream) {
  using namespace trident::simt::nccl;
  Comm* c = comm->impl.get();
  c->issue(stream, [=] {
    const bool mine = c->rank() == root;
    check(MPI_Reduce(mine && send == recv ? MPI_IN_PLACE : send, mine ? recv : nullptr, mpi_count(count),
                     mpi_type(type), MPI_SUM, root, c->mpi()),
          "MPI_Reduce");
  }, "ncclReduce");
  return ncclSuccess;
}
inline ncclResult_t ncclBroadcast(const void* send, void* recv, std::size_t count, ncclDataType_t type, int root,
                                  ncclComm_t comm, cudaStream_t stream) {
  using namespace trident::simt::nccl;
  Comm* c = comm->impl.get();
  c->issue(stream, [=] {
    if (c->rank() == root && send != recv) std::memcpy(recv, send, count * std::size_t(type_size(type)));
    check(MPI_Bcast(recv, mpi_count(count), mpi_type(type), root, c->mpi()), "MPI_Bcast");
  }, "ncclBroadcast");
  return ncclSuccess;
}
inline ncclResult_t ncclAllGather(const void* send, void* recv, std::size_t count, ncclDataType_t type,
                                  ncclComm_t comm, cudaStream_t stream) {
  using namespace trident::simt::nccl;
  Comm* c = comm->impl.get();
  c->issue(stream, [=] {
    check(MPI_Allgather(send, mpi_count(count), mpi_type(type), recv, mpi_count(count), mpi_type(type), c->mpi()),
          "MPI_Allgather");
  }, "ncclAllGather");
  return ncclSuccess;
}
