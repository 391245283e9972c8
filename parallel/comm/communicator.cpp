// The implementation-independent parts of the interface.
#include "parallel/comm/communicator.h"

namespace trident {

std::size_t comm_type_size(CommType type) {
  switch (type) {
    case CommType::f32: return 4;
    case CommType::f64: return 8;
    case CommType::i32: return 4;
    case CommType::i64: return 8;
    case CommType::u8: return 1;
  }
  return 0;
}

int64_t CommCounters::total_bytes() const {
  int64_t total = 0;
  for (const auto& [name, op] : ops) total += op.bytes;
  return total;
}

int64_t CommCounters::total_calls() const {
  int64_t total = 0;
  for (const auto& [name, op] : ops) total += op.calls;
  return total;
}

void wait_all(std::vector<RequestPtr>& requests) {
  for (RequestPtr& request : requests)
    if (request) request->wait();
}

}  // namespace trident
