#pragma once
// SIGTERM and SIGUSR1 — what Slurm sends before a time limit or a preemption — ask the run to stop cleanly: the
// current step finishes, a checkpoint is written, and the process exits 0, so a requeued job resumes from it. A
// signal while the run starts stops it before its first step, with nothing written.
namespace trident {

// Installs the handlers (once). They only record the signal.
void install_stop_signal_handlers();
// The signal that asked to stop, or 0.
int stop_signal();

}  // namespace trident
