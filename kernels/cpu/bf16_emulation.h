#pragma once
// bf16 storage on the CPU, emulated: an op on bf16 arrays runs the fp32 kernel on widened copies and rounds its
// outputs back to bf16, once, as the CUDA kernels do (fp32 arithmetic, bf16 loads and stores). Slow (a copy per
// argument); it exists so that the bf16 model (train.precision: bf16) runs, and is tested, on every machine.
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "kernels/shared/bf16.h"

namespace trident::cpu {

// The fp32 copies start on a 64-byte boundary, as tensors do: BLAS may split its work by the address's alignment,
// and the fp32 sums must not depend on where the heap put a copy (or bf16 runs would differ run to run).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t{64}); }
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
};
using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

// A bf16 input widened to fp32 for the duration of one op; nullptr stays nullptr.
class Widened {
 public:
  Widened(const bf16* x, int64_t n) : data_(x == nullptr ? 0 : static_cast<std::size_t>(n)), null_(x == nullptr) {
    for (std::size_t i = 0; i < data_.size(); ++i) data_[i] = bf16_to_float(x[i]);
  }
  operator const float*() const { return null_ ? nullptr : data_.data(); }

 private:
  AlignedFloats data_;
  bool null_;
};

// A bf16 output seen as fp32 during one op and rounded back when the op is done (on destruction). An output the op
// accumulates into (backward's `+=`, GEMM with beta != 0) starts from its current values; nullptr stays nullptr.
class Narrowed {
 public:
  enum Mode { overwrite, accumulate };
  Narrowed(bf16* x, int64_t n, Mode mode)
      : out_(x), data_(x == nullptr ? 0 : static_cast<std::size_t>(n), 0.0f) {
    if (mode == accumulate)
      for (std::size_t i = 0; i < data_.size(); ++i) data_[i] = bf16_to_float(x[i]);
  }
  ~Narrowed() {
    for (std::size_t i = 0; i < data_.size(); ++i) out_[i] = float_to_bf16(data_[i]);
  }
  Narrowed(const Narrowed&) = delete;
  Narrowed& operator=(const Narrowed&) = delete;
  operator float*() { return out_ == nullptr ? nullptr : data_.data(); }

 private:
  bf16* out_;
  AlignedFloats data_;
};

// Elements a row-major matrix of `rows` x `cols` with row stride `ld` spans.
inline int64_t matrix_extent(int64_t rows, int64_t cols, int64_t ld) { return rows == 0 ? 0 : (rows - 1) * ld + cols; }

}  // namespace trident::cpu
