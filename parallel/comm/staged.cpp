// StagedCommunicator: buffers in a backend's memory, moved by the MPI communicator of the same members through host
// copies (staged.h).
#include "parallel/comm/staged.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "kernels/common/error.h"

namespace trident {

namespace {

using Bytes = std::vector<char>;

// Elements a per-rank layout spans: the end of its furthest block.
int64_t extent(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs) {
  int64_t end = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) end = std::max(end, displs[r] + counts[r]);
  return end;
}

// A host request over staging buffers; waiting uploads what it received (if anything) to the backend's buffer.
class StagedRequest final : public Request {
 public:
  StagedRequest(Backend& backend, Bytes send, Bytes recv, void* upload_to)
      : backend_(backend), send_(std::move(send)), recv_(std::move(recv)), upload_to_(upload_to) {}
  StagedRequest(const StagedRequest&) = delete;
  StagedRequest& operator=(const StagedRequest&) = delete;
  ~StagedRequest() override {
    try {
      wait();
    } catch (const Error& e) {  // a destructor cannot throw: report and go on
      std::fprintf(stderr, "trident: %s (waiting in a destructor)\n", e.what());
    }
  }
  // The host operation, started on this request's buffers (which must not move after it starts).
  void start(RequestPtr host) { host_ = std::move(host); }
  char* send_data() { return send_.data(); }
  char* recv_data() { return recv_.data(); }

  void wait() override {
    if (done_) return;
    done_ = true;  // also when waiting throws: the error is reported once
    host_->wait();
    if (upload_to_ != nullptr) backend_.upload(upload_to_, recv_.data(), recv_.size());
  }
  bool test() override {
    if (done_) return true;
    if (!host_->test()) return false;
    wait();
    return true;
  }

 private:
  Backend& backend_;
  Bytes send_, recv_;  // before host_: the host request is destroyed (and waited for) before its buffers
  void* upload_to_;
  RequestPtr host_;
  bool done_ = false;
};

class StagedCommunicator final : public Communicator {
 public:
  StagedCommunicator(Communicator& host, Backend& backend) : host_(host), backend_(backend) {}

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  const std::vector<int>& members() const override { return host_.members(); }

  void send(const void* data, int64_t count, CommType type, int peer, int tag) override {
    counters_.record("send", comm_bytes(count, type));
    const Bytes h = download(data, comm_bytes(count, type));
    host_.send(h.data(), count, type, peer, tag);
  }
  void recv(void* data, int64_t count, CommType type, int peer, int tag) override {
    counters_.record("recv", 0);
    Bytes h(static_cast<std::size_t>(comm_bytes(count, type)));
    host_.recv(h.data(), count, type, peer, tag);
    upload(data, h);
  }
  RequestPtr isend(const void* data, int64_t count, CommType type, int peer, int tag) override {
    counters_.record("isend", comm_bytes(count, type));
    auto r = std::make_unique<StagedRequest>(backend_, download(data, comm_bytes(count, type)), Bytes{}, nullptr);
    r->start(host_.isend(r->send_data(), count, type, peer, tag));
    return r;
  }
  RequestPtr irecv(void* data, int64_t count, CommType type, int peer, int tag) override {
    counters_.record("irecv", 0);
    Bytes received(static_cast<std::size_t>(comm_bytes(count, type)));
    auto r = std::make_unique<StagedRequest>(backend_, Bytes{}, std::move(received), data);
    r->start(host_.irecv(r->recv_data(), count, type, peer, tag));
    return r;
  }
  RequestPtr isendrecv(const void* send_data, int64_t send_count, int dest, void* recv_data, int64_t recv_count,
                       int source, CommType type, int tag) override {
    counters_.record("isendrecv", comm_bytes(send_count, type));
    auto r = std::make_unique<StagedRequest>(backend_, download(send_data, comm_bytes(send_count, type)),
                                             Bytes(static_cast<std::size_t>(comm_bytes(recv_count, type))), recv_data);
    r->start(host_.isendrecv(r->send_data(), send_count, dest, r->recv_data(), recv_count, source, type, tag));
    return r;
  }
  bool probe(int peer, int tag) override { return host_.probe(peer, tag); }

  void allreduce_sum(void* data, int64_t count, CommType type) override {
    counters_.record("allreduce", comm_bytes(count, type));
    Bytes h = download(data, comm_bytes(count, type));
    host_.allreduce_sum(h.data(), count, type);
    upload(data, h);
  }
  RequestPtr iallreduce_sum(void* data, int64_t count, CommType type) override {
    counters_.record("iallreduce", comm_bytes(count, type));
    auto r = std::make_unique<StagedRequest>(backend_, Bytes{}, download(data, comm_bytes(count, type)), data);
    r->start(host_.iallreduce_sum(r->recv_data(), count, type));
    return r;
  }
  RequestPtr ireduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts,
                                 CommType type) override {
    const int64_t total = std::reduce(counts.begin(), counts.end());
    counters_.record("ireduce_scatter", comm_bytes(total, type));
    TRIDENT_CHECK(static_cast<int>(counts.size()) == size(), "ireduce_scatter: {} counts for {} ranks",
                  counts.size(), size());
    auto r = std::make_unique<StagedRequest>(backend_, download(in, comm_bytes(total, type)),
                                             Bytes(static_cast<std::size_t>(
                                                 comm_bytes(counts[static_cast<std::size_t>(rank())], type))),
                                             out);
    r->start(host_.ireduce_scatter_sum(r->send_data(), r->recv_data(), counts, type));
    return r;
  }
  void broadcast(void* data, int64_t count, CommType type, int root) override {
    counters_.record("broadcast", rank() == root ? comm_bytes(count, type) : 0);
    Bytes h = download(data, comm_bytes(count, type));
    host_.broadcast(h.data(), count, type, root);
    upload(data, h);
  }
  void allgather(const void* in, void* out, int64_t count, CommType type) override {
    counters_.record("allgather", comm_bytes(count, type));
    const Bytes h_in = download(in, comm_bytes(count, type));
    Bytes h_out(static_cast<std::size_t>(comm_bytes(count, type) * size()));
    host_.allgather(h_in.data(), h_out.data(), count, type);
    upload(out, h_out);
  }
  // The v-forms write only their blocks of `out`: the rest of its extent is downloaded first and goes back as it was.
  void allgatherv(const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                  const std::vector<int64_t>& displs, CommType type) override {
    check_per_rank_layout("allgatherv", size(), counts, displs);
    counters_.record("allgatherv", comm_bytes(count, type));
    const Bytes h_in = download(in, comm_bytes(count, type));
    Bytes h_out = download(out, comm_bytes(extent(counts, displs), type));
    host_.allgatherv(h_in.data(), count, h_out.data(), counts, displs, type);
    upload(out, h_out);
  }
  void alltoall(const void* in, void* out, int64_t count, CommType type) override {
    counters_.record("alltoall", comm_bytes(count, type) * size());
    const Bytes h_in = download(in, comm_bytes(count, type) * size());
    Bytes h_out(h_in.size());
    host_.alltoall(h_in.data(), h_out.data(), count, type);
    upload(out, h_out);
  }
  void alltoallv(const void* in, const std::vector<int64_t>& send_counts, const std::vector<int64_t>& send_displs,
                 void* out, const std::vector<int64_t>& recv_counts, const std::vector<int64_t>& recv_displs,
                 CommType type) override {
    check_per_rank_layout("alltoallv", size(), send_counts, send_displs);
    check_per_rank_layout("alltoallv", size(), recv_counts, recv_displs);
    int64_t sent = 0;
    for (int64_t c : send_counts) sent += c;
    counters_.record("alltoallv", comm_bytes(sent, type));
    const Bytes h_in = download(in, comm_bytes(extent(send_counts, send_displs), type));
    Bytes h_out = download(out, comm_bytes(extent(recv_counts, recv_displs), type));
    host_.alltoallv(h_in.data(), send_counts, send_displs, h_out.data(), recv_counts, recv_displs, type);
    upload(out, h_out);
  }
  void barrier() override {
    counters_.record("barrier", 0);
    host_.barrier();
  }

  Communicator* subgroup(const std::vector<int>& ranks) override { return over(host_.subgroup(ranks)); }
  Communicator* split(int color, int key) override { return over(host_.split(color, key)); }
  Communicator* node_group() override { return over(host_.node_group()); }

  const CommCounters& counters() const override { return counters_; }
  void reset_counters() override { counters_ = {}; }

 private:
  // A host copy of `bytes` at `data` in the backend's memory, after every op issued before.
  Bytes download(const void* data, int64_t bytes) {
    Bytes h(static_cast<std::size_t>(bytes));
    if (bytes > 0) backend_.download(h.data(), data, h.size());
    return h;
  }
  void upload(void* data, const Bytes& h) {
    if (!h.empty()) backend_.upload(data, h.data(), h.size());
  }
  Communicator* over(Communicator* host_child) {
    if (host_child == nullptr) return nullptr;  // split with a negative colour
    std::unique_ptr<StagedCommunicator>& slot = children_[host_child];
    if (!slot) slot = std::make_unique<StagedCommunicator>(*host_child, backend_);
    return slot.get();
  }

  Communicator& host_;
  Backend& backend_;
  CommCounters counters_;
  std::map<Communicator*, std::unique_ptr<StagedCommunicator>> children_;  // by host sub-communicator
};

}  // namespace

std::unique_ptr<Communicator> make_staged_communicator(Communicator& host, Backend& backend) {
  return std::make_unique<StagedCommunicator>(host, backend);
}

}  // namespace trident
