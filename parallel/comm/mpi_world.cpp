// The world communicator: MPI is initialised on first use and finalised at exit, after every communicator is freed.
#include <memory>

#include "kernels/common/error.h"
#include "parallel/comm/mpi_comm.h"

namespace trident {

namespace {

class MpiWorld {
 public:
  MpiWorld() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // FUNNELED: OpenMP threads compute, only the main thread calls MPI. Without mpirun/srun this is a singleton
      // start, a 1-rank world.
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_mpi_ = true;
      if (provided < MPI_THREAD_FUNNELED)
        throw RuntimeError("MPI does not provide MPI_THREAD_FUNNELED, which Trident's OpenMP ranks need");
    }
    // A duplicate keeps Trident's traffic and error handler apart from anything else using MPI_COMM_WORLD.
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    world_ = std::make_unique<MpiCommunicator>(comm);
  }

  // A function-local static: destroyed at exit, after any static built later that may still hold a communicator.
  ~MpiWorld() {
    world_.reset();  // frees the world and, through its caches, every sub-communicator
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) MPI_Finalize();
  }

  Communicator& world() { return *world_; }

 private:
  bool owns_mpi_ = false;
  std::unique_ptr<MpiCommunicator> world_;
};

}  // namespace

Communicator& world() {
  static MpiWorld instance;
  return instance.world();
}

void abort_job_if_distributed(int exit_code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
}

}  // namespace trident
