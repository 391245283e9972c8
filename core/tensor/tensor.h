#pragma once
// A small strided tensor: shape, strides (in elements), dtype, device, and shared ownership of a buffer taken
// from an Allocator (which must outlive its tensors). Kernels take raw pointers and sizes, llm.c style; the
// Tensor is what the model, the optimizer and checkpoints hold and pass around.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/error.h"
#include "core/tensor/allocator.h"
#include "kernels/shared/bf16.h"

namespace trident {

enum class DType : uint8_t { f32, bf16 };

std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);    // "f32", "bf16"

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<bf16>() { return DType::bf16; }

using Shape = std::vector<int64_t>;

class Tensor {
 public:
  Tensor() = default;

  // Uninitialised (or NaN-poisoned, if the allocator says so) / zero-filled contiguous tensors, on the allocator's
  // device.
  static Tensor empty(Allocator& allocator, Shape shape, DType dtype = DType::f32);
  static Tensor zeros(Allocator& allocator, Shape shape, DType dtype = DType::f32);

  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int dim() const { return static_cast<int>(shape_.size()); }
  int64_t size(int d) const;
  int64_t numel() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool defined() const { return storage_ != nullptr; }
  bool is_contiguous() const;

  template <class T> T* data() const {
    if (dtype_of<T>() != dtype_)
      throw_runtime_error("tensor {} accessed as {}", describe(), dtype_name(dtype_of<T>()));
    return reinterpret_cast<T*>(static_cast<char*>(storage_.get()) + offset_ * dtype_size(dtype_));
  }
  void* raw() const { return static_cast<char*>(storage_.get()) + offset_ * dtype_size(dtype_); }

  // Same elements, new shape (contiguous tensors only; one dimension may be -1).
  Tensor view(Shape shape) const;
  // Elements [start, start+length) along dimension d; shares the buffer.
  Tensor narrow(int d, int64_t start, int64_t length) const;

  // "f32[4, 64, 768] cpu" (plus "strided" when not contiguous).
  std::string describe() const;

 private:
  std::shared_ptr<void> storage_;
  int64_t offset_ = 0;  // in elements
  Shape shape_;
  Shape strides_;
  DType dtype_ = DType::f32;
  Device device_ = Device::cpu;
};

Shape contiguous_strides(const Shape& shape);
std::string shape_string(const Shape& shape);  // "[4, 64, 768]"

}  // namespace trident
