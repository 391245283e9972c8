// NcclCommunicator: the Communicator interface over NCCL, for device buffers (parallel/comm/nccl.h).
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <numeric>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "kernels/common/error.h"
#include "parallel/comm/nccl.h"

namespace trident {

namespace {

ncclDataType_t nccl_type(CommType type) {
  switch (type) {
    case CommType::f32: return ncclFloat32;
    case CommType::f64: return ncclFloat64;
    case CommType::i32: return ncclInt32;
    case CommType::i64: return ncclInt64;
    case CommType::u8: return ncclUint8;
    case CommType::bf16: return ncclBfloat16;
  }
  throw RuntimeError(fmt::format("unknown CommType {}", static_cast<int>(type)));
}

const char* at(const void* data, int64_t offset) { return static_cast<const char*>(data) + offset; }
char* at(void* data, int64_t offset) { return static_cast<char*>(data) + offset; }

class NcclCommunicator;

// Completes when a CUDA event recorded after the operation has fired on the communicator's stream.
class NcclRequest final : public Request {
 public:
  NcclRequest(NcclCommunicator& comm, std::string op);
  NcclRequest(const NcclRequest&) = delete;
  NcclRequest& operator=(const NcclRequest&) = delete;
  ~NcclRequest() override;
  void wait() override;
  bool test() override;

 private:
  NcclCommunicator& comm_;
  std::string op_;
  cudaEvent_t event_ = nullptr;
  bool done_ = false;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Communicator& host, int device, cudaStream_t producer);
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  ~NcclCommunicator() override;

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  const std::vector<int>& members() const override { return host_.members(); }

  void send(const void* data, int64_t count, CommType type, int peer, int /*tag*/) override {
    counters_.record("send", comm_bytes(count, type));
    after_producer("send");
    enqueue_send("send", data, count, type, peer);
    finish("send");
  }
  void recv(void* data, int64_t count, CommType type, int peer, int /*tag*/) override {
    counters_.record("recv", 0);
    after_producer("recv");
    enqueue_recv("recv", data, count, type, peer);
    finish("recv");
  }
  RequestPtr isend(const void* data, int64_t count, CommType type, int peer, int /*tag*/) override {
    counters_.record("isend", comm_bytes(count, type));
    after_producer("isend");
    enqueue_send("isend", data, count, type, peer);
    return std::make_unique<NcclRequest>(*this, "isend");
  }
  RequestPtr irecv(void* data, int64_t count, CommType type, int peer, int /*tag*/) override {
    counters_.record("irecv", 0);
    after_producer("irecv");
    enqueue_recv("irecv", data, count, type, peer);
    return std::make_unique<NcclRequest>(*this, "irecv");
  }

  RequestPtr isendrecv(const void* send_data, int64_t send_count, int dest, void* recv_data, int64_t recv_count,
                       int source, CommType type, int /*tag*/) override {
    counters_.record("isendrecv", comm_bytes(send_count, type));
    grouped("isendrecv", [&] {
      enqueue_send("isendrecv", send_data, send_count, type, dest);
      enqueue_recv("isendrecv", recv_data, recv_count, type, source);
    });
    return std::make_unique<NcclRequest>(*this, "isendrecv");
  }

  void allreduce_sum(void* data, int64_t count, CommType type) override {
    counters_.record("allreduce", comm_bytes(count, type));
    enqueue_allreduce("allreduce", data, count, type);
    finish("allreduce");
  }
  RequestPtr iallreduce_sum(void* data, int64_t count, CommType type) override {
    counters_.record("iallreduce", comm_bytes(count, type));
    enqueue_allreduce("iallreduce", data, count, type);
    return std::make_unique<NcclRequest>(*this, "iallreduce");
  }
  RequestPtr ireduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts,
                                 CommType type) override;
  void broadcast(void* data, int64_t count, CommType type, int root) override;
  void allgather(const void* in, void* out, int64_t count, CommType type) override;
  void allgatherv(const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                  const std::vector<int64_t>& displs, CommType type) override;
  RequestPtr iallgatherv(const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                         const std::vector<int64_t>& displs, CommType type) override;
  void alltoall(const void* in, void* out, int64_t count, CommType type) override;
  void alltoallv(const void* in, const std::vector<int64_t>& send_counts, const std::vector<int64_t>& send_displs,
                 void* out, const std::vector<int64_t>& recv_counts, const std::vector<int64_t>& recv_displs,
                 CommType type) override;
  void barrier() override;

  Communicator* subgroup(const std::vector<int>& ranks) override { return over(host_.subgroup(ranks)); }
  Communicator* split(int color, int key) override { return over(host_.split(color, key)); }
  Communicator* node_group() override { return over(host_.node_group()); }

  const CommCounters& counters() const override { return counters_; }
  void reset_counters() override { counters_ = {}; }

  cudaStream_t stream() const { return stream_; }
  // Waits for `event` while watching NCCL for asynchronous errors.
  void wait_event(cudaEvent_t event, const std::string& op);

 private:
  [[noreturn]] void fail(const std::string& op, const std::string& why) const {
    throw RuntimeError(fmt::format("nccl {} failed on rank {} of a {}-rank communicator: {}", op, rank(), size(), why));
  }
  void check(ncclResult_t rc, const std::string& op) const {
    if (rc != ncclSuccess) fail(op, fmt::format("{} ({})", ncclGetErrorString(rc), ncclGetLastError(comm_)));
  }
  void check(cudaError_t rc, const std::string& op) const {
    if (rc != cudaSuccess) fail(op, fmt::format("CUDA: {}", cudaGetErrorString(rc)));
  }
  void check_live(const std::string& op) const {
    if (comm_ == nullptr) fail(op, "the communicator was aborted after an earlier error");
  }
  void check_device_pointer(const void* data, int64_t bytes, const std::string& op) const;
  // ncclGroupStart/End around `body`; a failing call inside still ends the group before throwing.
  template <class Body>
  void grouped(const std::string& op, Body body);

  // The communicator's stream waits for the work issued so far on the producer stream.
  void after_producer(const std::string& op);
  void check_peer(int peer, const std::string& op) const;
  void enqueue_send(const std::string& op, const void* data, int64_t count, CommType type, int peer);
  void enqueue_recv(const std::string& op, void* data, int64_t count, CommType type, int peer);
  void enqueue_allreduce(const std::string& op, void* data, int64_t count, CommType type);
  void finish(const std::string& op);  // blocking calls: wait until the stream has run everything issued
  // The grouped sends and receives of an all-gather of uneven blocks, on the stream after the producer's work.
  void enqueue_allgatherv(const char* op, const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                          const std::vector<int64_t>& displs, CommType type);
  Communicator* over(Communicator* host_child);

  Communicator& host_;
  int device_;
  cudaStream_t producer_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  cudaEvent_t produced_ = nullptr;  // recorded on the producer before each operation
  int32_t* scratch_ = nullptr;  // one device int for barrier()
  CommCounters counters_;
  std::map<Communicator*, std::unique_ptr<NcclCommunicator>> children_;  // by host sub-communicator
};

// ---- requests -------------------------------------------------------------------------------------------------

NcclRequest::NcclRequest(NcclCommunicator& comm, std::string op) : comm_(comm), op_(std::move(op)) {
  cudaError_t rc = cudaEventCreateWithFlags(&event_, cudaEventDisableTiming);
  if (rc == cudaSuccess) rc = cudaEventRecord(event_, comm_.stream());
  if (rc != cudaSuccess)
    throw RuntimeError(fmt::format("nccl {}: recording its completion event failed: {}", op_, cudaGetErrorString(rc)));
}

NcclRequest::~NcclRequest() {
  try {
    wait();
  } catch (const RuntimeError& e) {  // a destructor cannot throw: report and go on
    std::fprintf(stderr, "trident: %s (waiting in a destructor)\n", e.what());
  }
  if (event_ != nullptr) cudaEventDestroy(event_);
}

void NcclRequest::wait() {
  if (done_) return;
  done_ = true;  // also when waiting throws: the error is reported once
  comm_.wait_event(event_, op_);
}

bool NcclRequest::test() {
  if (done_) return true;
  const cudaError_t rc = cudaEventQuery(event_);
  if (rc == cudaErrorNotReady) return false;
  wait();  // finished or failed: wait() reports which
  return true;
}

// ---- lifetime -------------------------------------------------------------------------------------------------

NcclCommunicator::NcclCommunicator(Communicator& host, int device, cudaStream_t producer)
    : host_(host), device_(device), producer_(producer) {
  // Every member must have its device before any enters ncclCommInitRank, or the others would wait there forever.
  std::string why;
  int count = 0;
  if (cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess)
    why = fmt::format("no CUDA device: {}", cudaGetErrorString(rc));
  else if (device < 0 || device >= count)
    why = fmt::format("device {} does not exist ({} device(s))", device, count);
  else if (cudaError_t set = cudaSetDevice(device); set != cudaSuccess)
    why = fmt::format("cudaSetDevice({}): {}", device, cudaGetErrorString(set));
  int32_t failed = why.empty() ? 0 : 1;
  host_.allreduce_sum(&failed, 1, CommType::i32);
  if (!why.empty()) fail("init", why);
  if (failed > 0) fail("init", fmt::format("{} other rank(s) could not use their CUDA device", failed));

  // Rank 0 makes the unique id and broadcasts it with a status, so a failure there ends every rank's wait.
  struct {
    int32_t ok;
    ncclUniqueId id;
  } hello{};
  if (rank() == 0) hello.ok = ncclGetUniqueId(&hello.id) == ncclSuccess ? 1 : 0;
  host_.broadcast(&hello, sizeof(hello), CommType::u8, 0);
  if (!hello.ok) fail("init", "rank 0 could not create an ncclUniqueId");
  check(ncclCommInitRank(&comm_, size(), hello.id, rank()), "init");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "init");
  check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "init");
  check(cudaEventCreateWithFlags(&produced_, cudaEventDisableTiming), "init");
  check(cudaMalloc(reinterpret_cast<void**>(&scratch_), sizeof(int32_t)), "init");
}

NcclCommunicator::~NcclCommunicator() {
  children_.clear();
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (comm_ != nullptr) ncclCommDestroy(comm_);
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (done_ != nullptr) cudaEventDestroy(done_);
  if (produced_ != nullptr) cudaEventDestroy(produced_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Communicator* NcclCommunicator::over(Communicator* host_child) {
  if (host_child == nullptr) return nullptr;  // split with a negative colour
  std::unique_ptr<NcclCommunicator>& slot = children_[host_child];
  if (!slot) slot = std::make_unique<NcclCommunicator>(*host_child, device_, producer_);
  return slot.get();
}

// ---- waiting --------------------------------------------------------------------------------------------------

void NcclCommunicator::wait_event(cudaEvent_t event, const std::string& op) {
  check_live(op);
  for (;;) {
    const cudaError_t rc = cudaEventQuery(event);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) check(rc, op);
    ncclResult_t async = ncclSuccess;
    check(ncclCommGetAsyncError(comm_, &async), op);
    if (async != ncclSuccess && async != ncclInProgress) {
      const std::string why = fmt::format("{} ({})", ncclGetErrorString(async), ncclGetLastError(comm_));
      ncclCommAbort(comm_);  // frees the stream's kernels that wait for a peer that will not come
      comm_ = nullptr;
      fail(op, why);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void NcclCommunicator::finish(const std::string& op) {
  check(cudaEventRecord(done_, stream_), op);
  wait_event(done_, op);
}

// ---- checks ---------------------------------------------------------------------------------------------------

void NcclCommunicator::check_device_pointer(const void* data, int64_t bytes, const std::string& op) const {
  if (bytes == 0) return;
  cudaPointerAttributes attributes{};
  const cudaError_t rc = cudaPointerGetAttributes(&attributes, data);
  if (rc != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error cudaPointerGetAttributes left behind
    fail(op, fmt::format("buffer {} is not a CUDA pointer: {}", data, cudaGetErrorString(rc)));
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)
    fail(op, fmt::format("buffer {} is host memory; NCCL communicators take device buffers (the MPI communicator "
                         "takes host ones)",
                         data));
}

void NcclCommunicator::after_producer(const std::string& op) {
  check(cudaEventRecord(produced_, producer_), op);
  check(cudaStreamWaitEvent(stream_, produced_, 0), op);
}

template <class Body>
void NcclCommunicator::grouped(const std::string& op, Body body) {
  check_live(op);
  after_producer(op);
  check(ncclGroupStart(), op);
  try {
    body();
  } catch (...) {
    ncclGroupEnd();
    throw;
  }
  check(ncclGroupEnd(), op);
}

// ---- point to point -------------------------------------------------------------------------------------------

void NcclCommunicator::check_peer(int peer, const std::string& op) const {
  if (peer < 0 || peer >= size())
    fail(op, fmt::format("peer {} is not a rank of this communicator [0, {})", peer, size()));
  check_live(op);
}

void NcclCommunicator::enqueue_send(const std::string& op, const void* data, int64_t count, CommType type, int peer) {
  check_peer(peer, op);
  check_device_pointer(data, comm_bytes(count, type), op);
  check(ncclSend(data, static_cast<size_t>(count), nccl_type(type), peer, comm_, stream_), op);
}

void NcclCommunicator::enqueue_recv(const std::string& op, void* data, int64_t count, CommType type, int peer) {
  check_peer(peer, op);
  check_device_pointer(data, comm_bytes(count, type), op);
  check(ncclRecv(data, static_cast<size_t>(count), nccl_type(type), peer, comm_, stream_), op);
}

// ---- collectives ----------------------------------------------------------------------------------------------

void NcclCommunicator::enqueue_allreduce(const std::string& op, void* data, int64_t count, CommType type) {
  check_device_pointer(data, comm_bytes(count, type), op);
  check_live(op);
  after_producer(op);
  check(ncclAllReduce(data, data, static_cast<size_t>(count), nccl_type(type), ncclSum, comm_, stream_), op);
}

void NcclCommunicator::broadcast(void* data, int64_t count, CommType type, int root) {
  counters_.record("broadcast", rank() == root ? comm_bytes(count, type) : 0);
  if (root < 0 || root >= size()) fail("broadcast", fmt::format("root {} is not a rank in [0, {})", root, size()));
  check_device_pointer(data, comm_bytes(count, type), "broadcast");
  check_live("broadcast");
  after_producer("broadcast");
  check(ncclBroadcast(data, data, static_cast<size_t>(count), nccl_type(type), root, comm_, stream_), "broadcast");
  finish("broadcast");
}

void NcclCommunicator::allgather(const void* in, void* out, int64_t count, CommType type) {
  counters_.record("allgather", comm_bytes(count, type));
  check_device_pointer(in, comm_bytes(count, type), "allgather");
  check_device_pointer(out, comm_bytes(count, type) * size(), "allgather");
  check_live("allgather");
  after_producer("allgather");
  check(ncclAllGather(in, out, static_cast<size_t>(count), nccl_type(type), comm_, stream_), "allgather");
  finish("allgather");
}

// NCCL's reduce-scatter takes equal blocks: one grouped reduce per rank, each to its block's owner.
RequestPtr NcclCommunicator::ireduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts,
                                                 CommType type) {
  TRIDENT_CHECK(static_cast<int>(counts.size()) == size(), "ireduce_scatter: {} counts for {} ranks", counts.size(),
                size());
  const int64_t total = std::reduce(counts.begin(), counts.end());
  counters_.record("ireduce_scatter", comm_bytes(total, type));
  check_device_pointer(in, comm_bytes(total, type), "ireduce_scatter");
  check_device_pointer(out, comm_bytes(counts[static_cast<std::size_t>(rank())], type), "ireduce_scatter");
  const ncclDataType_t t = nccl_type(type);
  grouped("ireduce_scatter", [&] {
    int64_t offset = 0;
    for (int r = 0; r < size(); ++r) {
      const int64_t n = counts[static_cast<std::size_t>(r)];
      if (n > 0)
        check(ncclReduce(static_cast<const char*>(in) + comm_bytes(offset, type), out, static_cast<size_t>(n), t,
                         ncclSum, r, comm_, stream_),
              "ireduce_scatter");
      offset += n;
    }
  });
  return std::make_unique<NcclRequest>(*this, "ireduce_scatter");
}

// NCCL has no v-collectives: one grouped send/recv per peer (self included) is how NCCL expresses them.
void NcclCommunicator::enqueue_allgatherv(const char* op, const void* in, int64_t count, void* out,
                                          const std::vector<int64_t>& counts, const std::vector<int64_t>& displs,
                                          CommType type) {
  check_per_rank_layout(op, size(), counts, displs);
  counters_.record(op, comm_bytes(count, type));
  check_device_pointer(in, comm_bytes(count, type), op);
  check_device_pointer(out, comm_bytes(std::reduce(counts.begin(), counts.end()), type), op);
  const ncclDataType_t t = nccl_type(type);
  grouped(op, [&] {
    for (int r = 0; r < size(); ++r) {
      check(ncclSend(in, static_cast<size_t>(count), t, r, comm_, stream_), op);
      check(ncclRecv(at(out, comm_bytes(displs[r], type)), static_cast<size_t>(counts[r]), t, r, comm_, stream_), op);
    }
  });
}

void NcclCommunicator::allgatherv(const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                                  const std::vector<int64_t>& displs, CommType type) {
  enqueue_allgatherv("allgatherv", in, count, out, counts, displs, type);
  finish("allgatherv");
}

RequestPtr NcclCommunicator::iallgatherv(const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                                         const std::vector<int64_t>& displs, CommType type) {
  enqueue_allgatherv("iallgatherv", in, count, out, counts, displs, type);
  return std::make_unique<NcclRequest>(*this, "iallgatherv");
}

void NcclCommunicator::alltoall(const void* in, void* out, int64_t count, CommType type) {
  counters_.record("alltoall", comm_bytes(count, type) * size());
  check_device_pointer(in, comm_bytes(count, type) * size(), "alltoall");
  check_device_pointer(out, comm_bytes(count, type) * size(), "alltoall");
  const ncclDataType_t t = nccl_type(type);
  const int64_t block = comm_bytes(count, type);
  grouped("alltoall", [&] {
    for (int r = 0; r < size(); ++r) {
      check(ncclSend(at(in, r * block), static_cast<size_t>(count), t, r, comm_, stream_), "alltoall");
      check(ncclRecv(at(out, r * block), static_cast<size_t>(count), t, r, comm_, stream_), "alltoall");
    }
  });
  finish("alltoall");
}

void NcclCommunicator::alltoallv(const void* in, const std::vector<int64_t>& send_counts,
                                 const std::vector<int64_t>& send_displs, void* out,
                                 const std::vector<int64_t>& recv_counts, const std::vector<int64_t>& recv_displs,
                                 CommType type) {
  check_per_rank_layout("alltoallv", size(), send_counts, send_displs);
  check_per_rank_layout("alltoallv", size(), recv_counts, recv_displs);
  counters_.record("alltoallv", comm_bytes(std::reduce(send_counts.begin(), send_counts.end()), type));
  const ncclDataType_t t = nccl_type(type);
  for (int r = 0; r < size(); ++r) {
    check_device_pointer(at(in, comm_bytes(send_displs[r], type)), comm_bytes(send_counts[r], type), "alltoallv");
    check_device_pointer(at(out, comm_bytes(recv_displs[r], type)), comm_bytes(recv_counts[r], type), "alltoallv");
  }
  grouped("alltoallv", [&] {
    for (int r = 0; r < size(); ++r) {
      check(ncclSend(at(in, comm_bytes(send_displs[r], type)), static_cast<size_t>(send_counts[r]), t, r, comm_,
                     stream_),
            "alltoallv");
      check(ncclRecv(at(out, comm_bytes(recv_displs[r], type)), static_cast<size_t>(recv_counts[r]), t, r, comm_,
                     stream_),
            "alltoallv");
    }
  });
  finish("alltoallv");
}

// A one-element allreduce every member must join, then a wait for it: no member leaves before all have arrived.
void NcclCommunicator::barrier() {
  counters_.record("barrier", 0);
  check_live("barrier");
  check(ncclAllReduce(scratch_, scratch_, 1, ncclInt32, ncclSum, comm_, stream_), "barrier");
  finish("barrier");
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, int device, cudaStream_t producer) {
  return std::make_unique<NcclCommunicator>(host, device, producer);
}

}  // namespace trident
