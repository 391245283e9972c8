#include "parallel/comm/fault_tolerance.h"

#include "parallel/comm/mpi_comm.h"

#if TRIDENT_ULFM
#include <mpi-ext.h>
#endif

namespace trident {

namespace {

MpiCommunicator& mpi_of(Communicator& comm, const char* op) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(&comm);
  if (!mpi) throw_runtime_error("{} takes an MPI communicator", op);
#if !TRIDENT_ULFM
  throw_runtime_error("{}: this build has no fault-tolerant MPI; configure it with -DTRIDENT_ULFM=ON "
                      "(docs/elastic.md)", op);
#endif
  return *mpi;
}

}  // namespace

bool fault_tolerant_mpi() {
#if TRIDENT_ULFM
  world();  // MPI started
  // MPI_COMM_WORLD's MPIX_FT attribute: whether failures are reported (mpirun --with-ft ulfm) or abort the job
  int* enabled = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPIX_FT, &enabled, &found);
  return found && enabled && *enabled != 0;
#else
  return false;
#endif
}

void revoke(Communicator& comm) {
  [[maybe_unused]] MpiCommunicator& mpi = mpi_of(comm, "revoke");
#if TRIDENT_ULFM
  MPIX_Comm_revoke(mpi.native());
#endif
}

std::unique_ptr<Communicator> shrink(Communicator& comm) {
  [[maybe_unused]] MpiCommunicator& mpi = mpi_of(comm, "shrink");
#if TRIDENT_ULFM
  MPI_Comm survivors = MPI_COMM_NULL;
  const int rc = MPIX_Comm_shrink(mpi.native(), &survivors);
  if (rc != MPI_SUCCESS) throw_mpi_error(rc, "MPIX_Comm_shrink", comm.rank(), comm.size());
  return std::make_unique<MpiCommunicator>(survivors);
#else
  return nullptr;
#endif
}

bool agree(Communicator& comm, bool flag, bool* failed) {
  [[maybe_unused]] MpiCommunicator& mpi = mpi_of(comm, "agree");
#if TRIDENT_ULFM
  int value = flag ? 1 : 0;
  const int rc = MPIX_Comm_agree(mpi.native(), &value);
  int error_class = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &error_class);
  // a death known to some survivor is reported to all (MPIX_ERR_PROC_FAILED), the value still agreed
  if (rc != MPI_SUCCESS && error_class != MPIX_ERR_PROC_FAILED)
    throw_mpi_error(rc, "MPIX_Comm_agree", comm.rank(), comm.size());
  if (failed) *failed = error_class == MPIX_ERR_PROC_FAILED;
  return value != 0;
#else
  (void)flag;
  (void)failed;
  return false;
#endif
}

}  // namespace trident
