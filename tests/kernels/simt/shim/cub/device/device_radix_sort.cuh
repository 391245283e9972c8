#pragma once
// SIMT emulation (cuda_runtime.h here): CUB's radix sort of (key, value) pairs as a stable sort on the host, with
// CUB's two-phase protocol (a null temporary buffer asks for its size).
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace cub {

struct DeviceRadixSort {
  template <class Key, class Value>
  static cudaError_t SortPairs(void* temp, std::size_t& temp_bytes, const Key* keys_in, Key* keys_out,
                               const Value* values_in, Value* values_out, int n, int begin_bit = 0,
                               int end_bit = int(sizeof(Key) * 8), cudaStream_t stream = nullptr) {
    if (temp == nullptr) {
      temp_bytes = 1;
      return cudaSuccess;
    }
    if (begin_bit != 0 || end_bit != int(sizeof(Key) * 8)) return cudaErrorInvalidValue;  // not emulated
    trident::simt::enqueue(stream, [=] {  // on the stream, as a launch
      std::vector<int> order(static_cast<std::size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys_in[a] < keys_in[b]; });
      for (int i = 0; i < n; ++i) {
        keys_out[i] = keys_in[order[i]];
        values_out[i] = values_in[order[i]];
      }
    });
    return cudaSuccess;
  }
};

}  // namespace cub
