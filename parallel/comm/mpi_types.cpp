// Element types, error strings and the derived datatypes that carry 64-bit counts and offsets through MPI 3.1.
#include <climits>

#include <fmt/format.h>

#include "kernels/common/error.h"
#include "parallel/comm/fault_tolerance.h"
#include "parallel/comm/mpi_comm.h"

#if TRIDENT_ULFM
#include <mpi-ext.h>
#endif

namespace trident {

MPI_Datatype mpi_datatype(CommType type) {
  switch (type) {
    case CommType::f32: return MPI_FLOAT;
    case CommType::f64: return MPI_DOUBLE;
    case CommType::i32: return MPI_INT32_T;
    case CommType::i64: return MPI_INT64_T;
    case CommType::u8: return MPI_UINT8_T;
    case CommType::bf16: return MPI_UINT16_T;  // moved, never summed (mpi_sum_type)
  }
  throw RuntimeError(fmt::format("unknown CommType {}", static_cast<int>(type)));
}

MPI_Datatype mpi_sum_type(CommType type, const char* op) {
  if (type == CommType::bf16)
    throw RuntimeError(fmt::format("{}: MPI cannot sum bf16 (no bf16 arithmetic); sum in fp32, or over NCCL", op));
  return mpi_datatype(type);
}

void throw_mpi_error(int rc, const std::string& op, int rank, int size) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  std::string message =
      fmt::format("{} failed on rank {} of a {}-rank communicator: {}", op, rank, size, std::string(text, length));
#if TRIDENT_ULFM
  int error_class = MPI_SUCCESS;
  MPI_Error_class(rc, &error_class);
  if (error_class == MPIX_ERR_PROC_FAILED || error_class == MPIX_ERR_PROC_FAILED_PENDING ||
      error_class == MPIX_ERR_REVOKED)
    throw PeerFailure(std::move(message));
#endif
  throw RuntimeError(std::move(message));
}

MpiType::~MpiType() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (type_ != MPI_DATATYPE_NULL && !finalized) MPI_Type_free(&type_);
}

// Datatype constructors belong to no communicator, so their errors go to MPI_COMM_WORLD's handler, which Trident
// leaves fatal: a failure aborts rather than returns.
MpiType block_type(CommType type, int64_t count, int64_t offset) {
  const MPI_Datatype base = mpi_datatype(type);
  const int64_t size = static_cast<int64_t>(comm_type_size(type));
  const int64_t piece = kMpiPieceBytes / size;
  const int64_t whole = count / piece, rest = count % piece;
  MPI_Datatype piece_type, pieces_type, block, resized;
  MPI_Type_contiguous(static_cast<int>(piece), base, &piece_type);
  MPI_Type_contiguous(static_cast<int>(whole), piece_type, &pieces_type);
  // the whole pieces, then the remaining elements, starting `offset` bytes in
  int lengths[2] = {1, static_cast<int>(rest)};
  MPI_Aint displs[2] = {offset, offset + whole * piece * size};
  MPI_Datatype types[2] = {pieces_type, base};
  MPI_Type_create_struct(2, lengths, displs, types, &block);
  // exact extent, so consecutive blocks (allgather's and alltoall's per-rank blocks) are packed back to back
  MPI_Type_create_resized(block, 0, offset + count * size, &resized);
  MPI_Type_commit(&resized);
  MPI_Type_free(&block);
  MPI_Type_free(&pieces_type);
  MPI_Type_free(&piece_type);
  return MpiType(resized);
}

void AlltoallwBlocks::add(CommType type, int64_t count, int64_t displ) {
  const int64_t size = static_cast<int64_t>(comm_type_size(type));
  const int64_t offset = displ * size;  // alltoallw displacements are in bytes
  if (count * size <= kMpiPieceBytes && offset <= INT_MAX) {
    counts_.push_back(static_cast<int>(count));
    displs_.push_back(static_cast<int>(offset));
    types_.push_back(mpi_datatype(type));
    return;
  }
  owned_.push_back(block_type(type, count, offset));
  counts_.push_back(1);
  displs_.push_back(0);
  types_.push_back(owned_.back().get());
}

}  // namespace trident
