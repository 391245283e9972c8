#include "core/tensor/tensor.h"

#include <cstring>

#include <fmt/ranges.h>

namespace trident {

std::size_t dtype_size(DType dtype) { return dtype == DType::f32 ? 4 : 2; }
const char* dtype_name(DType dtype) { return dtype == DType::f32 ? "f32" : "bf16"; }

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

std::string shape_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Tensor Tensor::empty(Allocator& allocator, Shape shape, DType dtype) {
  int64_t count = 1;
  for (int64_t extent : shape) {
    if (extent < 0) throw_runtime_error("tensor shape {} has a negative extent", shape_string(shape));
    count *= extent;
  }
  Tensor t;
  void* ptr = allocator.allocate(static_cast<std::size_t>(count) * dtype_size(dtype));
  t.storage_ = std::shared_ptr<void>(ptr, [&allocator](void* p) { allocator.release(p); });
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = allocator.device();
  return t;
}

Tensor Tensor::zeros(Allocator& allocator, Shape shape, DType dtype) {
  Tensor t = empty(allocator, std::move(shape), dtype);
  allocator.resource().fill(t.raw(), t.nbytes(), 0);
  return t;
}

int64_t Tensor::size(int d) const {
  TRIDENT_CHECK(d >= 0 && d < dim(), "dimension {} of {}", d, describe());
  return shape_[d];
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t extent : shape_) n *= extent;
  return n;
}

bool Tensor::is_contiguous() const { return strides_ == contiguous_strides(shape_); }

Tensor Tensor::view(Shape shape) const {
  TRIDENT_CHECK(is_contiguous(), "view of a strided tensor {}", describe());
  int64_t known = 1;
  int inferred = -1;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (shape[d] == -1) {
      TRIDENT_CHECK(inferred < 0, "view {} has two -1 extents", shape_string(shape));
      inferred = d;
    } else {
      known *= shape[d];
    }
  }
  if (inferred >= 0 && known > 0) shape[inferred] = numel() / known;
  Tensor t = *this;
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  TRIDENT_CHECK(t.numel() == numel(), "view {} of {}", shape_string(t.shape_), describe());
  return t;
}

Tensor Tensor::narrow(int d, int64_t start, int64_t length) const {
  TRIDENT_CHECK(d >= 0 && d < dim() && start >= 0 && length >= 0 && start + length <= shape_[d],
                "narrow(dim={}, start={}, length={}) of {}", d, start, length, describe());
  Tensor t = *this;
  t.offset_ += start * strides_[d];
  t.shape_[d] = length;
  return t;
}

std::string Tensor::describe() const {
  return fmt::format("{}{} {}{}", dtype_name(dtype_), shape_string(shape_), device_name(device_),
                     is_contiguous() ? "" : " strided");
}

}  // namespace trident
