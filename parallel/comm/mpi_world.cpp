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
      // OpenMP threads compute and the main thread makes the calls (FUNNELED, required); where MPI allows it
      // (MULTIPLE), a background thread may run its own communicator's collectives too (ATOM's averaging). Without
      // mpirun/srun this is a singleton start, a 1-rank world.
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided_);
      owns_mpi_ = true;
      if (provided_ < MPI_THREAD_FUNNELED)
        throw RuntimeError("MPI does not provide MPI_THREAD_FUNNELED, which Trident's OpenMP ranks need");
    } else {
      MPI_Query_thread(&provided_);
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
  bool thread_multiple() const { return provided_ >= MPI_THREAD_MULTIPLE; }

 private:
  bool owns_mpi_ = false;
  int provided_ = MPI_THREAD_SINGLE;
  std::unique_ptr<MpiCommunicator> world_;
};

MpiWorld& mpi_world() {
  static MpiWorld instance;
  return instance;
}

}  // namespace

Communicator& world() { return mpi_world().world(); }

bool mpi_thread_multiple() { return mpi_world().thread_multiple(); }

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
