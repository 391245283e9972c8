#pragma once
// Surviving a dead rank (docs/elastic.md): MPI's user-level failure mitigation (ULFM), in the builds configured with
// TRIDENT_ULFM over the Open MPI 5 that scripts/install-deps.sh puts in .deps/ompi5, launched with
// `mpirun --with-ft ulfm`. There a communicator operation that involves a dead rank fails with PeerFailure instead of
// ending the job, and the survivors rebuild from what is left: one that notices revokes the communicator, so every
// pending and later operation on it fails on every member too (errors are not reported to every survivor alike);
// then they shrink it to the survivors and agree on what to do next. Every communicator derived from a revoked one
// (subgroups, node groups, a background thread's duplicate) must be rebuilt from the shrunk one. The other builds
// have none of it: fault_tolerant_mpi() is false and the calls below are RuntimeErrors.
#include <memory>

#include "kernels/common/error.h"
#include "parallel/comm/communicator.h"

namespace trident {

// A communicator operation failed because a member died (MPIX_ERR_PROC_FAILED), or because another member revoked
// the communicator on noticing a death (MPIX_ERR_REVOKED).
class PeerFailure : public RuntimeError {
 public:
  explicit PeerFailure(std::string message) : RuntimeError(std::move(message)) {}
};

// Whether this build survives dead ranks (TRIDENT_ULFM) and this job was started with failure semantics (an MPI
// whose communicators report a death rather than abort: `mpirun --with-ft ulfm`).
bool fault_tolerant_mpi();

// MPIX_Comm_revoke: every pending and later operation on `comm` fails with PeerFailure on every member. Not
// collective; revoking twice is harmless.
void revoke(Communicator& comm);
// MPIX_Comm_shrink: a new communicator of `comm`'s surviving members, in their order (members() names their world
// ranks). Collective over the survivors; works on a revoked communicator.
std::unique_ptr<Communicator> shrink(Communicator& comm);
// MPIX_Comm_agree: `flag` and-ed over the survivors of `comm`, the same on every one of them, even where some died
// during the call; `failed` says whether a member of `comm` is known dead. Collective over the survivors.
bool agree(Communicator& comm, bool flag, bool* failed = nullptr);

}  // namespace trident
