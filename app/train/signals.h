#pragma once
// SIGTERM and SIGUSR1 — what Slurm sends before a time limit or a preemption — ask the run to stop cleanly: the
// current step finishes, a checkpoint is written, and the process exits 0, so a requeued job resumes from it. A
// signal while the run starts stops it before its first step, with nothing written.
//
// The signals are taken on a thread of their own: install blocks them in the calling thread, so every thread started
// after it (MPI's, OpenMP's, ATOM's) inherits the block, and one thread waits for them in sigwait. No handler ever
// runs on a thread that computes: oneDNN 2.6's sgemm (device.blas: onednn) corrupts the heap when a signal handler
// runs on its thread in the middle of a call.
namespace trident {

// Installs the stop signals' thread (once). Call it before any other thread starts; a thread started earlier keeps
// the signals unblocked and records them with a handler instead.
void install_stop_signal_handlers();
// The signal that asked to stop, or 0.
int stop_signal();

}  // namespace trident
