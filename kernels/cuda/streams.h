#pragma once
// Streams and events of one device. Compute runs on `compute`; `copy_in` brings data (ATOM's next layer, a batch)
// host→device and `copy_out` takes results device→host, each overlapping compute. Order across streams is
// expressed with events: record on the producer, make the consumer wait — never a device-wide sync.
#include <cuda_runtime.h>

namespace trident::cuda {

class Event {
 public:
  Event();  // timing disabled: cheapest to record and wait on
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  cudaEvent_t get() const { return event_; }
  void synchronize() const;  // blocks the host until the event has fired
  bool done() const;         // has it fired? (never blocks)

 private:
  cudaEvent_t event_ = nullptr;
};

class Stream {
 public:
  Stream();  // non-blocking: does not serialise with the legacy default stream
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  cudaStream_t get() const { return stream_; }
  void record(Event& event) const;      // event fires when the work issued so far is done
  void wait(const Event& event) const;  // later work on this stream starts after the event fires
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

struct DeviceStreams {
  Stream compute, copy_in, copy_out;
};

}  // namespace trident::cuda
