#pragma once
// The MPI implementation of Communicator, for host buffers. Private to parallel/comm: the rest of Trident sees only
// communicator.h and world().
#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "parallel/comm/communicator.h"

namespace trident {

// MPI 3.1 (OpenMPI 4) takes int counts, so transfers are described to MPI in pieces of at most 64 MiB: reductions,
// broadcasts and point-to-point messages are split into such pieces (which also bounds the scratch buffer MPI
// allocates for a reduction), and larger blocks of gathers and all-to-alls become one element of a derived datatype.
// Every count MPI sees is then far below INT_MAX, whatever the element size.
inline constexpr int64_t kMpiPieceBytes = int64_t{64} << 20;

MPI_Datatype mpi_datatype(CommType type);
// The datatype of an MPI sum: mpi_datatype, but bf16 throws (MPI would add the bit patterns as integers).
MPI_Datatype mpi_sum_type(CommType type, const char* op);

// "allreduce failed on rank 2 of a 4-rank communicator: MPI_ERR_TRUNCATE: message truncated".
[[noreturn]] void throw_mpi_error(int rc, const std::string& op, int rank, int size);

// An owned derived datatype, freed on destruction.
class MpiType {
 public:
  explicit MpiType(MPI_Datatype type) : type_(type) {}
  MpiType(MpiType&& other) noexcept : type_(std::exchange(other.type_, MPI_DATATYPE_NULL)) {}
  MpiType(const MpiType&) = delete;
  MpiType& operator=(const MpiType&) = delete;
  MpiType& operator=(MpiType&&) = delete;
  ~MpiType();
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_;
};

// `count` elements starting `offset` bytes into a buffer, as one element of a committed datatype of extent
// offset + count * size: how a count beyond a piece, or an offset beyond an int, is handed to MPI.
MpiType block_type(CommType type, int64_t count, int64_t offset);

// The per-peer (count, datatype, byte displacement) arrays of MPI_Alltoallw. Each peer's block is described by the
// predefined type when it fits a piece, else by a derived block_type; both have the same type signature, so each
// rank chooses per peer on its own.
class AlltoallwBlocks {
 public:
  void add(CommType type, int64_t count, int64_t displ);  // displ in elements
  const int* counts() const { return counts_.data(); }
  const int* displs() const { return displs_.data(); }
  const MPI_Datatype* types() const { return types_.data(); }

 private:
  std::vector<int> counts_, displs_;
  std::vector<MPI_Datatype> types_;
  std::vector<MpiType> owned_;
};

// Non-blocking operation split into pieces: one MPI request per piece.
class MpiRequest final : public Request {
 public:
  MpiRequest(std::string op, int rank, int size) : op_(std::move(op)), rank_(rank), size_(size) {}
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;
  ~MpiRequest() override;
  void wait() override;
  bool test() override;
  std::vector<MPI_Request>& pieces() { return pieces_; }
  // Arrays a vector collective reads until it completes (MPI lets it).
  std::vector<int>& arguments() { return arguments_; }

 private:
  [[noreturn]] void fail(int rc, const std::vector<MPI_Status>& statuses);
  std::vector<MPI_Request> pieces_;
  std::vector<int> arguments_;
  std::string op_;  // for error messages
  int rank_, size_;
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm);  // takes ownership: freed on destruction
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::vector<int>& members() const override { return members_; }

  void send(const void* data, int64_t count, CommType type, int peer, int tag) override;
  void recv(void* data, int64_t count, CommType type, int peer, int tag) override;
  RequestPtr isend(const void* data, int64_t count, CommType type, int peer, int tag) override;
  RequestPtr irecv(void* data, int64_t count, CommType type, int peer, int tag) override;
  bool probe(int peer, int tag) override;
  RequestPtr isendrecv(const void* send_data, int64_t send_count, int dest, void* recv_data, int64_t recv_count,
                       int source, CommType type, int tag) override;

  void allreduce_sum(void* data, int64_t count, CommType type) override;
  RequestPtr iallreduce_sum(void* data, int64_t count, CommType type) override;
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

  Communicator* subgroup(const std::vector<int>& ranks) override;
  Communicator* split(int color, int key) override;
  Communicator* node_group() override;

  const CommCounters& counters() const override { return counters_; }
  void reset_counters() override { counters_ = {}; }
  MPI_Comm native() const { return comm_; }  // for the fault-tolerance calls (fault_tolerance.h)

 private:
  void check(int rc, const char* op) const {
    if (rc != MPI_SUCCESS) throw_mpi_error(rc, op, rank_, size_);
  }
  // Starts the pieces of one message into `request`.
  void post_send(MpiRequest& request, const void* data, int64_t count, CommType type, int peer, int tag);
  void post_recv(MpiRequest& request, void* data, int64_t count, CommType type, int peer, int tag);

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<int> members_;
  CommCounters counters_;
  std::map<std::vector<int>, std::unique_ptr<MpiCommunicator>> subgroups_;   // by member set
  std::map<std::vector<int>, std::unique_ptr<MpiCommunicator>> splits_;  // by partition; null: no colour
  std::unique_ptr<MpiCommunicator> node_;
};

}  // namespace trident
