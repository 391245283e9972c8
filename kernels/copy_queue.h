#pragma once
// Copies between host memory and a backend's memory that run beside the compute (a strategy swapping layers in and
// out of device memory).
// A queue is used from one thread (the copy engine's); mark_compute() alone is called from the thread that issues the
// compute. Copies run in the order they were issued.
//
// On the CPU the compute has finished when its call returns, and copies are memcpy. On CUDA the compute runs on the
// backend's stream, later than the host issues it: a copy into or out of a buffer the compute reads or writes must
// first wait for the compute to reach the point where the host released that buffer, which mark_compute() records
// and after_compute() waits for on the queue's own stream, without stopping either side.
#include <cstddef>
#include <cstdint>

#include "kernels/shared/bf16.h"

namespace trident {

class CopyQueue {
 public:
  virtual ~CopyQueue() = default;

  // A point after every op the compute thread has issued so far (called on that thread).
  virtual int64_t mark_compute() = 0;
  // Copies issued after this call start once the compute has reached `mark`.
  virtual void after_compute(int64_t mark) = 0;

  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void zero(float* dst, int64_t n) = 0;
  // dst = src rounded to bf16, both in the backend's memory (a swapped-in weight's bf16 copy).
  virtual void round_to_bf16(bf16* dst, const float* src, int64_t n) = 0;
  // Blocks until every copy issued has completed.
  virtual void finish() = 0;
};

}  // namespace trident
