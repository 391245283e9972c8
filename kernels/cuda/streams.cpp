#include "kernels/cuda/streams.h"

#include "kernels/cuda/check.h"

namespace trident::cuda {

Event::Event() { TRIDENT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
Event::~Event() { cudaEventDestroy(event_); }
void Event::synchronize() const { TRIDENT_CUDA_CHECK(cudaEventSynchronize(event_)); }

bool Event::done() const {
  const cudaError_t rc = cudaEventQuery(event_);
  if (rc == cudaErrorNotReady) return false;
  TRIDENT_CUDA_CHECK(rc);
  return true;
}

Stream::Stream() { TRIDENT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
Stream::~Stream() { cudaStreamDestroy(stream_); }
void Stream::record(Event& event) const { TRIDENT_CUDA_CHECK(cudaEventRecord(event.get(), stream_)); }
void Stream::wait(const Event& event) const { TRIDENT_CUDA_CHECK(cudaStreamWaitEvent(stream_, event.get(), 0)); }
void Stream::synchronize() const { TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

}  // namespace trident::cuda
