#pragma once
// SIMT emulation: the subset of the CUDA runtime the kernels and the CUDA backend use, on the host, so their sources
// run in CI where no GPU is (tests/kernels/simt/README.md). "Device" memory is host memory. A launch runs the grid's
// blocks one after another in a shuffled order; a block's threads are fibers on the calling thread, switched at
// barriers: __syncthreads waits for the block, __syncwarp and the shuffles for the thread's warp. A barrier that only
// part of a block reaches is reported and aborts. Dynamic and static shared memory are poisoned (NaN) before each
// block, so reading what no thread wrote shows in the results. Non-blocking streams are deferred queues: their work
// runs only when something waits for it, so a missing order between streams, or host code reading too early, shows.
// Arithmetic is the host's: kernel_exp is the host polynomial, not expf.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <tuple>
#include <type_traits>
#include <vector>

#include <setjmp.h>
#include <ucontext.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// A block's threads are fibers of one host thread and blocks run one after another, so a function-local static is
// what __shared__ is: one variable the block's threads share. Every such static lives in the section simt_shared,
// which run_block fills with 0xff bytes (NaN as float and double) before each block, as it fills dynamic shared
// memory: reading what no thread of the block wrote shows in the results.
#define __shared__ __attribute__((section("simt_shared"))) static
extern "C" {
extern char __start_simt_shared[] __attribute__((weak));  // the linker's bounds of the section (absent: none)
extern char __stop_simt_shared[] __attribute__((weak));
}

using cudaError_t = int;
enum : int { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 };
struct CUstream_st;
using cudaStream_t = CUstream_st*;
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

// Device code calls min and max unqualified, as CUDA's overloads allow.
using std::max;
using std::min;

namespace trident::simt {

inline constexpr std::size_t kFiberStack = 64 * 1024;

// A fiber starts once a launch (makecontext, one setcontext) and then runs the block body in a loop, once a block; it
// switches to and from the scheduler with _setjmp/_longjmp, which leave the signal mask alone: swapcontext makes a
// system call for it at every switch, which took 90% of the emulation's time.
struct Fiber {
  jmp_buf context;  // where the fiber resumes: at a barrier, or before its next block
  std::unique_ptr<char[]> stack{new char[kFiberStack]};
  bool started = false;
  bool done = false;
};

// The running block: its fibers, barrier counters, the warps' shuffle slots and its shared memory. One per launch,
// reset for each block (fiber stacks are too large to allocate per block).
struct Block {
  Block(unsigned threads, std::size_t shared_bytes)
      : fibers(threads), warp_arrived((threads + 31) / 32), warp_generation((threads + 31) / 32), exchange(threads),
        shared((shared_bytes + 7) / 8) {}
  std::vector<Fiber> fibers;
  unsigned running = 0;           // the fiber switched to
  bool progress = false;          // since the scheduler's last pass: an arrival, a release or a finished fiber
  unsigned arrived = 0;           // at __syncthreads
  uint64_t generation = 0;        // __syncthreads released so far
  std::vector<unsigned> warp_arrived;
  std::vector<uint64_t> warp_generation;
  std::vector<uint64_t> exchange;  // a shuffle slot per thread
  std::vector<uint64_t> shared;    // 8-byte aligned, as the device's dynamic shared memory
  jmp_buf scheduler;
  const std::function<void()>* body = nullptr;
};

inline Block* current = nullptr;  // the emulation runs on one host thread at a time
// Launches from several host threads (ATOM's copy engine converts on a stream of its own) take turns: the grid and
// block dimensions, the running block and the __shared__ statics are the emulation's one device.
inline std::mutex launches;

inline void* shared_memory() { return current->shared.data(); }

// Back to the scheduler until the barrier (count threads, counters `arrived` and `generation`) releases.
inline void barrier(unsigned& arrived, uint64_t& generation, unsigned count) {
  Block& b = *current;
  b.progress = true;
  if (++arrived == count) {
    arrived = 0;
    ++generation;
    return;
  }
  const uint64_t mine = generation;
  while (generation == mine)
    if (_setjmp(b.fibers[b.running].context) == 0) _longjmp(b.scheduler, 1);
}

// A fiber's life: the block body, once for each block of the launch, back to the scheduler after each. It never
// returns: the launch ends with every fiber parked before its next block, and their stacks are freed with the Block.
[[noreturn]] inline void fiber_main() {
  for (;;) {
    Block& b = *current;
    (*b.body)();
    Fiber& fiber = b.fibers[b.running];
    fiber.done = true;
    if (_setjmp(fiber.context) == 0) _longjmp(b.scheduler, 1);
  }
}

// Runs the fiber until it waits at a barrier or finishes its block.
inline void resume(Block& b, Fiber& fiber) {
  if (_setjmp(b.scheduler) != 0) return;
  if (fiber.started) _longjmp(fiber.context, 1);
  fiber.started = true;
  ucontext_t start;
  getcontext(&start);
  start.uc_stack.ss_sp = fiber.stack.get();
  start.uc_stack.ss_size = kFiberStack;
  start.uc_link = nullptr;
  makecontext(&start, fiber_main, 0);
  setcontext(&start);
}

// Runs one block to completion: every fiber in turn until it waits at a barrier or finishes; a full pass without
// progress means some threads wait at a barrier the others never reach.
inline void run_block(Block& b, const std::function<void()>& body) {
  b.body = &body;
  b.arrived = 0;
  std::fill(b.warp_arrived.begin(), b.warp_arrived.end(), 0u);
  const float nan = std::nanf("");
  float* f = reinterpret_cast<float*>(b.shared.data());
  std::fill(f, f + 2 * b.shared.size(), nan);
  if (__start_simt_shared != nullptr) std::fill(__start_simt_shared, __stop_simt_shared, char(0xff));
  for (Fiber& fiber : b.fibers) fiber.done = false;
  std::size_t remaining = b.fibers.size();
  while (remaining > 0) {
    b.progress = false;
    for (unsigned t = 0; t < b.fibers.size(); ++t) {
      if (b.fibers[t].done) continue;
      b.running = t;  // the linear thread index: warps are consecutive runs of 32 of it
      threadIdx = dim3(t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y));
      resume(b, b.fibers[t]);
      if (b.fibers[t].done) {
        --remaining;
        b.progress = true;
      }
    }
    if (!b.progress) {
      std::fprintf(stderr, "SIMT emulation: block (%u, %u, %u) deadlocks: a barrier that only some threads reach\n",
                   blockIdx.x, blockIdx.y, blockIdx.z);
      std::abort();
    }
  }
}

// The grid's blocks in a shuffled order (a GPU promises none): a kernel whose result depends on which block runs
// first shows it. The order is seeded by the launch's number, so a run repeats itself.
template <class Body>
void run_grid(dim3 grid, dim3 block, std::size_t shared_bytes, const Body& body) {
  const std::lock_guard<std::mutex> one_at_a_time(launches);
  static uint64_t launch_number = 0;
  gridDim = grid;
  blockDim = block;
  const std::function<void()> run = body;
  Block b(block.x * block.y * block.z, shared_bytes);
  current = &b;
  std::vector<dim3> order;
  order.reserve(std::size_t(grid.x) * grid.y * grid.z);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) order.emplace_back(x, y, z);
  std::mt19937_64 rng(++launch_number);
  std::shuffle(order.begin(), order.end(), rng);
  for (const dim3& index : order) {
    blockIdx = index;
    run_block(b, run);
  }
  current = nullptr;
}

// TRIDENT_LAUNCH(grid, block, shared, stream, kernel)(args...): the grid, run to completion.
// Queues the grid on its stream (deferred: the runtime below), the arguments copied as a launch copies them.
void enqueue_launch(CUstream_st* stream, std::function<void()> grid);

template <class... Params>
struct Launch {
  void (*kernel)(Params...);
  dim3 grid, block;
  std::size_t shared_bytes;
  CUstream_st* stream;
  template <class... Args>
  void operator()(Args&&... args) const {
    enqueue_launch(stream, [kernel = kernel, grid = grid, block = block, shared_bytes = shared_bytes,
                            packed = std::make_tuple(std::decay_t<Args>(args)...)] {
      std::apply([&](const auto&... a) { run_grid(grid, block, shared_bytes, [&] { kernel(a...); }); }, packed);
    });
  }
};
template <class... Params>
Launch<Params...> launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes,
                         CUstream_st* stream) {
  return {kernel, grid, block, shared_bytes, stream};
}

}  // namespace trident::simt

#define TRIDENT_LAUNCH(grid, block, shared_bytes, stream, ...) \
  ::trident::simt::launch(__VA_ARGS__, grid, block, shared_bytes, stream)
#define TRIDENT_DYNAMIC_SHARED(type, name) type* name = static_cast<type*>(::trident::simt::shared_memory())

inline void __syncthreads() {
  trident::simt::Block& b = *trident::simt::current;
  trident::simt::barrier(b.arrived, b.generation, unsigned(b.fibers.size()));
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  trident::simt::Block& b = *trident::simt::current;
  const unsigned w = b.running / 32;
  trident::simt::barrier(b.warp_arrived[w], b.warp_generation[w], std::min(32u, unsigned(b.fibers.size()) - 32 * w));
}

// Every lane publishes its value, the warp meets, each reads its partner's, the warp meets again (so no slot is
// overwritten before it is read).
template <class T>
T __shfl_xor_sync(unsigned, T value, int lane_mask) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  trident::simt::Block& b = *trident::simt::current;
  const unsigned lane = b.running % 32, first = b.running - lane;
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  b.exchange[b.running] = bits;
  __syncwarp();
  bits = b.exchange[first + (lane ^ unsigned(lane_mask))];
  __syncwarp();
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

// Fibers switch only at barriers, so a read-modify-write is atomic as it stands.
template <class T>
T atomicMin(T* address, T value) {
  const T old = *address;
  if (value < old) *address = value;
  return old;
}

// ---- the runtime: host memory; streams are deferred queues ----
// Work on a stream made with cudaStreamCreateWithFlags is queued and runs only when something waits for it: a
// stream or event synchronize (cudaEventQuery counts: it waits too), another stream's cudaStreamWaitEvent once that
// stream runs, cudaDeviceSynchronize, cudaFree. So host code or another stream that reads too early sees what was
// there before (stale, or the NaN of fresh shared memory), as a GPU can show it. The legacy stream (nullptr) runs
// at once and, as on a GPU, does not wait for the non-blocking streams Trident makes; neither does a blocking
// cudaMemcpy. A copy between the device and pageable host memory is synchronous, as CUDA's is (after the stream's
// earlier work); one with page-locked memory (cudaMallocHost) is queued.
enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2,
                      cudaMemoryTypeManaged = 3 };
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};
struct CUstream_st {
  std::deque<std::function<void()>> work;
  uint64_t issued = 0;  // items ever queued
  uint64_t done = 0;    // items run
};
struct CUevent_st {
  CUstream_st* stream = nullptr;  // where it was recorded (nullptr: nothing to wait for)
  uint64_t position = 0;          // the items of that stream it follows
};

namespace trident::simt {

// The emulated device's state. One recursive lock: queued work runs on whichever host thread waits for it (ATOM's
// copy thread may run compute kernels a copy waits for), and running it may wait for another stream.
struct Device {
  std::recursive_mutex mutex;
  std::set<CUstream_st*> streams;
  std::map<uintptr_t, std::size_t> device_memory, pinned_memory;  // start -> bytes
  uint64_t host_waits = 0;  // stream, event and device synchronizes: host round trips a test can count
  // Device memory taken outside a budget: what is live, and its most since a test reset it. A test's allocator marks
  // its own allocations with `in_budget` (single-threaded tests only); stream-ordered frees count at the free.
  bool in_budget = false;
  std::set<uintptr_t> budgeted;
  std::size_t outside_bytes = 0, outside_peak = 0;
};
inline Device& device() {
  static Device d;
  return d;
}
inline bool within(const std::map<uintptr_t, std::size_t>& ranges, const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = ranges.upper_bound(a);
  if (it == ranges.begin()) return false;
  --it;
  return a < it->first + std::max<std::size_t>(it->second, 1);
}
// Runs `stream`'s queued work up to its `upto`-th item.
inline void drain(CUstream_st* stream, uint64_t upto) {
  if (stream == nullptr) return;
  const std::lock_guard<std::recursive_mutex> lock(device().mutex);
  while (stream->done < upto && !stream->work.empty()) {
    std::function<void()> item = std::move(stream->work.front());
    stream->work.pop_front();
    item();
    ++stream->done;
  }
}
inline void drain_all() {
  const std::lock_guard<std::recursive_mutex> lock(device().mutex);
  const std::vector<CUstream_st*> streams(device().streams.begin(), device().streams.end());
  for (CUstream_st* s : streams) drain(s, s->issued);
}
// Queues `work` on `stream`, or runs it now on the legacy stream.
inline void enqueue(CUstream_st* stream, std::function<void()> work) {
  if (stream == nullptr) {
    work();
    return;
  }
  const std::lock_guard<std::recursive_mutex> lock(device().mutex);
  stream->work.push_back(std::move(work));
  ++stream->issued;
}
// A copy touching pageable host memory (`host`, not from cudaMallocHost) is synchronous after the stream's earlier
// work; others are queued.
inline void copy_on(CUstream_st* stream, const void* host, std::function<void()> copy) {
  bool pageable = false;
  {
    const std::lock_guard<std::recursive_mutex> lock(device().mutex);
    pageable = host != nullptr && !within(device().pinned_memory, host) && !within(device().device_memory, host);
  }
  if (pageable && stream != nullptr) {
    drain(stream, stream->issued);
    copy();
  } else {
    enqueue(stream, std::move(copy));
  }
}
inline void* allocate(std::map<uintptr_t, std::size_t>& ranges, std::size_t bytes) {
  void* p = std::malloc(bytes > 0 ? bytes : 1);
  if (p != nullptr) {
    const std::lock_guard<std::recursive_mutex> lock(device().mutex);
    ranges[reinterpret_cast<uintptr_t>(p)] = bytes;
    Device& d = device();
    if (&ranges == &d.device_memory && d.in_budget) {
      d.budgeted.insert(reinterpret_cast<uintptr_t>(p));
    } else if (&ranges == &d.device_memory) {
      d.outside_bytes += bytes;
      d.outside_peak = std::max(d.outside_peak, d.outside_bytes);
    }
  }
  return p;
}
// Takes a device block off the count of what is live, once.
inline void uncount(uintptr_t start, std::size_t bytes) {
  Device& d = device();
  if (d.budgeted.erase(start) == 0) d.outside_bytes -= bytes;
}
// `counted`: the count still holds it (a stream-ordered free took it off already).
inline void release(std::map<uintptr_t, std::size_t>& ranges, void* p, bool counted = true) {
  if (p == nullptr) return;
  const std::lock_guard<std::recursive_mutex> lock(device().mutex);
  const auto it = ranges.find(reinterpret_cast<uintptr_t>(p));
  if (it != ranges.end() && &ranges == &device().device_memory && counted) uncount(it->first, it->second);
  if (it != ranges.end()) ranges.erase(it);
  std::free(p);
}

}  // namespace trident::simt

inline cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  *p = trident::simt::allocate(trident::simt::device().device_memory, bytes);
  return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T>
cudaError_t cudaMalloc(T** p, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
// cudaFree waits for the whole device first, as CUDA's does.
inline cudaError_t cudaFree(void* p) {
  trident::simt::drain_all();
  trident::simt::release(trident::simt::device().device_memory, p);
  return cudaSuccess;
}
inline cudaError_t cudaMallocHost(void** p, std::size_t bytes) {
  *p = trident::simt::allocate(trident::simt::device().pinned_memory, bytes);
  return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFreeHost(void* p) {
  trident::simt::drain_all();
  trident::simt::release(trident::simt::device().pinned_memory, p);
  return cudaSuccess;
}
inline cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t) { return cudaMalloc(p, bytes); }
// The block leaves the count now: CUDA's pool hands it to the next allocation ordered after the free on the same
// stream, before the stream has run that far. The emulation frees it when the stream gets there.
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  {
    trident::simt::Device& d = trident::simt::device();
    const std::lock_guard<std::recursive_mutex> lock(d.mutex);
    if (const auto it = d.device_memory.find(reinterpret_cast<uintptr_t>(p)); it != d.device_memory.end())
      trident::simt::uncount(it->first, it->second);
  }
  trident::simt::enqueue(stream, [p] { trident::simt::release(trident::simt::device().device_memory, p, false); });
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int value, std::size_t bytes) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                                   cudaStream_t stream) {
  const void* host = kind == cudaMemcpyHostToDevice ? src : kind == cudaMemcpyDeviceToHost ? dst : nullptr;
  trident::simt::copy_on(stream, host, [=] {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  });
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t stream) {
  trident::simt::enqueue(stream, [=] { std::memset(p, value, bytes); });
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                                     std::size_t width, std::size_t height, cudaMemcpyKind kind,
                                     cudaStream_t stream) {
  const void* host = kind == cudaMemcpyHostToDevice ? src : kind == cudaMemcpyDeviceToHost ? dst : nullptr;
  trident::simt::copy_on(stream, host, [=] {
    for (std::size_t r = 0; r < height; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
  });
  return cudaSuccess;
}
// The emulated device has 4 GiB; what cudaMalloc handed out is in use.
inline cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
  const std::lock_guard<std::recursive_mutex> lock(trident::simt::device().mutex);
  *total = std::size_t(1) << 32;
  std::size_t used = 0;
  for (const auto& [start, bytes] : trident::simt::device().device_memory) used += bytes;
  *free = *total - std::min(used, *total);
  return cudaSuccess;
}
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p) {
  const std::lock_guard<std::recursive_mutex> lock(trident::simt::device().mutex);
  *attributes = {};
  attributes->type = trident::simt::within(trident::simt::device().device_memory, p)   ? cudaMemoryTypeDevice
                     : trident::simt::within(trident::simt::device().pinned_memory, p) ? cudaMemoryTypeHost
                                                                                         : cudaMemoryTypeUnregistered;
  return cudaSuccess;
}

// ---- one emulated device: streams, events, attributes ----
enum : int { cudaErrorNotReady = 600 };
enum : unsigned { cudaStreamNonBlocking = 1, cudaEventDisableTiming = 2 };
enum cudaDeviceAttr {
  cudaDevAttrComputeCapabilityMajor,
  cudaDevAttrComputeCapabilityMinor,
  cudaDevAttrMultiProcessorCount,
  cudaDevAttrClockRate
};
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold };
using cudaEvent_t = CUevent_st*;
using cudaMemPool_t = struct CUmemPoolHandle_st*;
struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  int major, minor;
  int multiProcessorCount;
};
inline cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidValue;
  *prop = {};
  std::snprintf(prop->name, sizeof prop->name, "SIMT emulation");
  prop->totalGlobalMem = std::size_t(1) << 32;
  prop->multiProcessorCount = 1;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return cudaErrorInvalidValue;
  *value = attr == cudaDevAttrComputeCapabilityMajor ? 0 : attr == cudaDevAttrMultiProcessorCount ? 1 : 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int) {
  static int storage;  // a handle with nothing behind it: the pool is cudaMallocAsync's malloc
  *pool = reinterpret_cast<cudaMemPool_t>(&storage);
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }
inline cudaError_t cudaMemPoolTrimTo(cudaMemPool_t, std::size_t) { return cudaSuccess; }  // nothing is kept
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = new CUstream_st;
  const std::lock_guard<std::recursive_mutex> lock(trident::simt::device().mutex);
  trident::simt::device().streams.insert(*stream);
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr) return cudaSuccess;
  trident::simt::drain(stream, stream->issued);  // CUDA finishes a destroyed stream's work
  const std::lock_guard<std::recursive_mutex> lock(trident::simt::device().mutex);
  trident::simt::device().streams.erase(stream);
  delete stream;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  ++trident::simt::device().host_waits;
  if (stream != nullptr) trident::simt::drain(stream, stream->issued);
  return cudaSuccess;
}
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) {
  *event = new CUevent_st;
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;  // a stream waiting for it keeps its own copy of where it was recorded
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  const std::lock_guard<std::recursive_mutex> lock(trident::simt::device().mutex);
  event->stream = stream;
  event->position = stream != nullptr ? stream->issued : 0;
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  ++trident::simt::device().host_waits;
  trident::simt::drain(event->stream, event->position);
  return cudaSuccess;
}
inline cudaError_t cudaEventQuery(cudaEvent_t event) { return cudaEventSynchronize(event); }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  CUstream_st* const recorded = event->stream;
  const uint64_t position = event->position;
  trident::simt::enqueue(stream, [recorded, position] { trident::simt::drain(recorded, position); });
  return cudaSuccess;
}
inline const char* cudaGetErrorName(cudaError_t) { return "cudaError (SIMT emulation)"; }
inline cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidValue; }
inline cudaError_t cudaDeviceSynchronize() {
  ++trident::simt::device().host_waits;
  trident::simt::drain_all();
  return cudaSuccess;
}
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline const char* cudaGetErrorString(cudaError_t) { return "error (SIMT emulation)"; }
template <class Kernel>
cudaError_t cudaFuncSetAttribute(Kernel, cudaFuncAttribute, int) {
  return cudaSuccess;
}

namespace trident::simt {
inline void enqueue_launch(CUstream_st* stream, std::function<void()> grid) { enqueue(stream, std::move(grid)); }
}  // namespace trident::simt
