// MpiCommunicator: point to point and collectives over one MPI communicator, counted per operation.
#include "parallel/comm/mpi_comm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "kernels/common/error.h"

namespace trident {

namespace {

// Adds the wall time from its construction to its destruction to a counter: a blocking call's time on this rank.
class TimedCall {
 public:
  explicit TimedCall(CommCounters::Op& op) : op_(op), start_(std::chrono::steady_clock::now()) {}
  ~TimedCall() { op_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  TimedCall(const TimedCall&) = delete;
  TimedCall& operator=(const TimedCall&) = delete;

 private:
  CommCounters::Op& op_;
  std::chrono::steady_clock::time_point start_;
};

// Calls fn(byte offset, element count) for consecutive pieces of at most kMpiPieceBytes covering `count` elements.
// A zero count still makes one (empty) call, so a zero-length message synchronises as it does in MPI.
template <class Fn>
void for_each_piece(int64_t count, CommType type, Fn fn) {
  const int64_t piece = kMpiPieceBytes / static_cast<int64_t>(comm_type_size(type));
  int64_t done = 0;
  do {
    const int64_t n = std::min(piece, count - done);
    fn(comm_bytes(done, type), static_cast<int>(n));
    done += n;
  } while (done < count);
}

const char* at(const void* data, int64_t offset) { return static_cast<const char*>(data) + offset; }
char* at(void* data, int64_t offset) { return static_cast<char*>(data) + offset; }

}  // namespace

// ---- requests -------------------------------------------------------------------------------------------------

MpiRequest::~MpiRequest() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  try {
    wait();
  } catch (const RuntimeError& e) {  // a destructor cannot throw: report and go on
    std::fprintf(stderr, "trident: %s (waiting in a destructor)\n", e.what());
  }
}

// A request that failed (a dead peer, under the fault-tolerant MPI) is over: nothing is left to wait for. The error
// reported is its piece's (MPI_ERR_IN_STATUS says only that some piece failed).
void MpiRequest::fail(int rc, const std::vector<MPI_Status>& statuses) {
  if (rc == MPI_ERR_IN_STATUS)
    for (const MPI_Status& s : statuses)
      if (s.MPI_ERROR != MPI_SUCCESS && s.MPI_ERROR != MPI_ERR_PENDING) {
        rc = s.MPI_ERROR;
        break;
      }
  pieces_.clear();
  throw_mpi_error(rc, op_, rank_, size_);
}

void MpiRequest::wait() {
  std::vector<MPI_Status> statuses(pieces_.size());
  int rc = MPI_Waitall(static_cast<int>(pieces_.size()), pieces_.data(), statuses.data());
  if (rc != MPI_SUCCESS) fail(rc, statuses);
}

bool MpiRequest::test() {
  int done = 0;
  std::vector<MPI_Status> statuses(pieces_.size());
  int rc = MPI_Testall(static_cast<int>(pieces_.size()), pieces_.data(), &done, statuses.data());
  if (rc != MPI_SUCCESS) fail(rc, statuses);
  return done != 0;
}

// ---- lifetime -------------------------------------------------------------------------------------------------

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  // Failures come back as return codes (thrown as RuntimeError with context) instead of aborting the job.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Group group, world_group;
  MPI_Comm_group(comm_, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  std::vector<int> local(size_);
  std::iota(local.begin(), local.end(), 0);
  members_.resize(size_);
  check(MPI_Group_translate_ranks(group, size_, local.data(), world_group, members_.data()), "members");
  MPI_Group_free(&world_group);
  MPI_Group_free(&group);
}

MpiCommunicator::~MpiCommunicator() {
  subgroups_.clear();
  splits_.clear();
  node_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
}

// ---- point to point -------------------------------------------------------------------------------------------
// Pieces of one message share its tag; MPI delivers messages between a pair in order, so they match up.

void MpiCommunicator::send(const void* data, int64_t count, CommType type, int peer, int tag) {
  counters_.record("send", comm_bytes(count, type));
  for_each_piece(count, type, [&](int64_t offset, int n) {
    check(MPI_Send(at(data, offset), n, mpi_datatype(type), peer, tag, comm_), "send");
  });
}

void MpiCommunicator::recv(void* data, int64_t count, CommType type, int peer, int tag) {
  counters_.record("recv", 0);
  for_each_piece(count, type, [&](int64_t offset, int n) {
    check(MPI_Recv(at(data, offset), n, mpi_datatype(type), peer, tag, comm_, MPI_STATUS_IGNORE), "recv");
  });
}

void MpiCommunicator::post_send(MpiRequest& request, const void* data, int64_t count, CommType type, int peer,
                                int tag) {
  for_each_piece(count, type, [&](int64_t offset, int n) {
    check(MPI_Isend(at(data, offset), n, mpi_datatype(type), peer, tag, comm_, &request.pieces().emplace_back()),
          "isend");
  });
}

void MpiCommunicator::post_recv(MpiRequest& request, void* data, int64_t count, CommType type, int peer, int tag) {
  for_each_piece(count, type, [&](int64_t offset, int n) {
    check(MPI_Irecv(at(data, offset), n, mpi_datatype(type), peer, tag, comm_, &request.pieces().emplace_back()),
          "irecv");
  });
}

RequestPtr MpiCommunicator::isend(const void* data, int64_t count, CommType type, int peer, int tag) {
  counters_.record("isend", comm_bytes(count, type));
  auto request = std::make_unique<MpiRequest>("isend", rank_, size_);
  post_send(*request, data, count, type, peer, tag);
  return request;
}

RequestPtr MpiCommunicator::irecv(void* data, int64_t count, CommType type, int peer, int tag) {
  counters_.record("irecv", 0);
  auto request = std::make_unique<MpiRequest>("irecv", rank_, size_);
  post_recv(*request, data, count, type, peer, tag);
  return request;
}

bool MpiCommunicator::probe(int peer, int tag) {
  int arrived = 0;
  check(MPI_Iprobe(peer, tag, comm_, &arrived, MPI_STATUS_IGNORE), "probe");
  return arrived != 0;
}

RequestPtr MpiCommunicator::isendrecv(const void* send_data, int64_t send_count, int dest, void* recv_data,
                                      int64_t recv_count, int source, CommType type, int tag) {
  counters_.record("isendrecv", comm_bytes(send_count, type));
  auto request = std::make_unique<MpiRequest>("isendrecv", rank_, size_);
  post_recv(*request, recv_data, recv_count, type, source, tag);
  post_send(*request, send_data, send_count, type, dest, tag);
  return request;
}

// ---- collectives ----------------------------------------------------------------------------------------------

void MpiCommunicator::allreduce_sum(void* data, int64_t count, CommType type) {
  const MPI_Datatype sum_type = mpi_sum_type(type, "allreduce");
  counters_.record("allreduce", comm_bytes(count, type));
  for_each_piece(count, type, [&](int64_t offset, int n) {
    check(MPI_Allreduce(MPI_IN_PLACE, at(data, offset), n, sum_type, MPI_SUM, comm_), "allreduce");
  });
}

RequestPtr MpiCommunicator::iallreduce_sum(void* data, int64_t count, CommType type) {
  const MPI_Datatype sum_type = mpi_sum_type(type, "iallreduce");
  counters_.record("iallreduce", comm_bytes(count, type));
  auto request = std::make_unique<MpiRequest>("iallreduce", rank_, size_);
  for_each_piece(count, type, [&](int64_t offset, int n) {
    check(MPI_Iallreduce(MPI_IN_PLACE, at(data, offset), n, sum_type, MPI_SUM, comm_,
                         &request->pieces().emplace_back()),
          "iallreduce");
  });
  return request;
}

RequestPtr MpiCommunicator::ireduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts,
                                                CommType type) {
  TRIDENT_CHECK(static_cast<int>(counts.size()) == size_, "ireduce_scatter: {} counts for {} ranks", counts.size(),
                size_);
  const MPI_Datatype sum_type = mpi_sum_type(type, "ireduce_scatter");
  counters_.record("ireduce_scatter", comm_bytes(std::reduce(counts.begin(), counts.end()), type));
  auto request = std::make_unique<MpiRequest>("ireduce_scatter", rank_, size_);
  std::vector<int>& ints = request->arguments();
  for (int64_t c : counts) {
    TRIDENT_CHECK(c >= 0 && c <= std::numeric_limits<int>::max(), "ireduce_scatter: a block of {} elements", c);
    ints.push_back(static_cast<int>(c));
  }
  check(MPI_Ireduce_scatter(in, out, ints.data(), sum_type, MPI_SUM, comm_, &request->pieces().emplace_back()),
        "ireduce_scatter");
  return request;
}

void MpiCommunicator::broadcast(void* data, int64_t count, CommType type, int root) {
  counters_.record("broadcast", rank_ == root ? comm_bytes(count, type) : 0);
  for_each_piece(count, type, [&](int64_t offset, int n) {
    check(MPI_Bcast(at(data, offset), n, mpi_datatype(type), root, comm_), "broadcast");
  });
}

void MpiCommunicator::allgather(const void* in, void* out, int64_t count, CommType type) {
  counters_.record("allgather", comm_bytes(count, type));
  if (comm_bytes(count, type) <= kMpiPieceBytes) {
    const int n = static_cast<int>(count);
    check(MPI_Allgather(in, n, mpi_datatype(type), out, n, mpi_datatype(type), comm_), "allgather");
    return;
  }
  MpiType block = block_type(type, count, 0);
  check(MPI_Allgather(in, 1, block.get(), out, 1, block.get(), comm_), "allgather");
}

namespace {

// One rank's v-collective is a copy. Done here, not by MPI: Open MPI 4.1's alltoallw on a one-process communicator
// (coll/self) scales the byte displacements by the type's extent again, reading and writing past the buffers for any
// block that does not start at 0 (found by ASan).
void copy_own_block(const void* in, int64_t in_displ, void* out, int64_t out_displ, int64_t count, CommType type) {
  const auto size = static_cast<int64_t>(comm_type_size(type));
  if (count > 0)
    std::memcpy(static_cast<char*>(out) + out_displ * size, static_cast<const char*>(in) + in_displ * size,
                static_cast<std::size_t>(count * size));
}

}  // namespace

// MPI_Allgatherv takes int counts and displacements; alltoallw lets every block carry a 64-bit layout, sending
// the same input block to each rank.
void MpiCommunicator::allgatherv(const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                                 const std::vector<int64_t>& displs, CommType type) {
  check_per_rank_layout("allgatherv", size_, counts, displs);
  counters_.record("allgatherv", comm_bytes(count, type));
  if (size_ == 1) {
    TRIDENT_CHECK(counts[0] == count, "allgatherv: rank 0 sends {} elements and {} are expected", count, counts[0]);
    return copy_own_block(in, 0, out, displs[0], count, type);
  }
  AlltoallwBlocks send, receive;
  for (int r = 0; r < size_; ++r) {
    send.add(type, count, 0);
    receive.add(type, counts[r], displs[r]);
  }
  check(MPI_Alltoallw(in, send.counts(), send.displs(), send.types(), out, receive.counts(), receive.displs(),
                      receive.types(), comm_),
        "allgatherv");
}

// MPI_Iallgatherv takes int counts and displacements: a gather of more than 2^31 elements is made blocking.
RequestPtr MpiCommunicator::iallgatherv(const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                                        const std::vector<int64_t>& displs, CommType type) {
  check_per_rank_layout("iallgatherv", size_, counts, displs);
  const auto fits = [](int64_t n) { return n <= std::numeric_limits<int>::max(); };
  if (size_ == 1 || !fits(count) || !std::all_of(counts.begin(), counts.end(), fits) ||
      !std::all_of(displs.begin(), displs.end(), fits))
    return Communicator::iallgatherv(in, count, out, counts, displs, type);
  counters_.record("iallgatherv", comm_bytes(count, type));
  auto request = std::make_unique<MpiRequest>("iallgatherv", rank_, size_);
  std::vector<int>& ints = request->arguments();  // counts, then displacements: read until the gather completes
  ints.reserve(2 * counts.size());
  for (int64_t c : counts) ints.push_back(static_cast<int>(c));
  for (int64_t d : displs) ints.push_back(static_cast<int>(d));
  check(MPI_Iallgatherv(in, static_cast<int>(count), mpi_datatype(type), out, ints.data(), ints.data() + size_,
                        mpi_datatype(type), comm_, &request->pieces().emplace_back()),
        "iallgatherv");
  return request;
}

void MpiCommunicator::alltoall(const void* in, void* out, int64_t count, CommType type) {
  counters_.record("alltoall", comm_bytes(count, type) * size_);
  const TimedCall timed(counters_.ops["alltoall"]);
  if (comm_bytes(count, type) <= kMpiPieceBytes) {
    const int n = static_cast<int>(count);
    check(MPI_Alltoall(in, n, mpi_datatype(type), out, n, mpi_datatype(type), comm_), "alltoall");
    return;
  }
  MpiType block = block_type(type, count, 0);
  check(MPI_Alltoall(in, 1, block.get(), out, 1, block.get(), comm_), "alltoall");
}

// As allgatherv: alltoallw, so counts and displacements may exceed an int. A rank's choice of predefined or derived
// type per peer is its own (the type signatures match), which MPI_Alltoallv's single int layout could not offer.
void MpiCommunicator::alltoallv(const void* in, const std::vector<int64_t>& send_counts,
                                const std::vector<int64_t>& send_displs, void* out,
                                const std::vector<int64_t>& recv_counts, const std::vector<int64_t>& recv_displs,
                                CommType type) {
  check_per_rank_layout("alltoallv", size_, send_counts, send_displs);
  check_per_rank_layout("alltoallv", size_, recv_counts, recv_displs);
  counters_.record("alltoallv", comm_bytes(std::reduce(send_counts.begin(), send_counts.end()), type));
  const TimedCall timed(counters_.ops["alltoallv"]);
  if (size_ == 1) {
    TRIDENT_CHECK(send_counts[0] == recv_counts[0], "alltoallv: rank 0 sends {} elements to itself and expects {}",
                  send_counts[0], recv_counts[0]);
    return copy_own_block(in, send_displs[0], out, recv_displs[0], send_counts[0], type);
  }
  AlltoallwBlocks send, receive;
  for (int r = 0; r < size_; ++r) {
    send.add(type, send_counts[r], send_displs[r]);
    receive.add(type, recv_counts[r], recv_displs[r]);
  }
  check(MPI_Alltoallw(in, send.counts(), send.displs(), send.types(), out, receive.counts(), receive.displs(),
                      receive.types(), comm_),
        "alltoallv");
}

void MpiCommunicator::barrier() {
  counters_.record("barrier", 0);
  check(MPI_Barrier(comm_), "barrier");
}

}  // namespace trident
