// The implementation-independent parts of the interface.
#include "parallel/comm/communicator.h"

#include <fmt/format.h>

#include "kernels/common/error.h"

namespace trident {

std::size_t comm_type_size(CommType type) {
  switch (type) {
    case CommType::f32: return 4;
    case CommType::f64: return 8;
    case CommType::i32: return 4;
    case CommType::i64: return 8;
    case CommType::u8: return 1;
    case CommType::bf16: return 2;
  }
  return 0;
}

void CommCounters::record(const std::string& op, int64_t bytes) {
  Op& entry = ops[op];
  entry.calls += 1;
  entry.bytes += bytes;
}

double CommCounters::alltoall_seconds() const {
  double total = 0;
  for (const char* name : {"alltoall", "alltoallv"})
    if (const auto it = ops.find(name); it != ops.end()) total += it->second.seconds;
  return total;
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

namespace {

class CompletedRequest final : public Request {
 public:
  void wait() override {}
  bool test() override { return true; }
};

}  // namespace

RequestPtr Communicator::iallgatherv(const void* in, int64_t count, void* out, const std::vector<int64_t>& counts,
                                     const std::vector<int64_t>& displs, CommType type) {
  allgatherv(in, count, out, counts, displs, type);
  return std::make_unique<CompletedRequest>();
}

void check_per_rank_layout(const char* op, int size, const std::vector<int64_t>& counts,
                           const std::vector<int64_t>& displs) {
  if (std::ssize(counts) != size || std::ssize(displs) != size)
    throw RuntimeError(fmt::format("{}: needs one count and one displacement per rank ({}), got {} and {}", op, size,
                                   counts.size(), displs.size()));
  for (int r = 0; r < size; ++r)
    if (counts[r] < 0 || displs[r] < 0)
      throw RuntimeError(fmt::format("{}: negative count {} or displacement {} for rank {}", op, counts[r],
                                     displs[r], r));
}

bool Communicator::probe(int /*peer*/, int /*tag*/) {
  throw_runtime_error("probe: only MPI communicators can poll for a message");
}

void on_all_or_none(Communicator& group, const std::string& what, const std::function<void()>& work) {
  std::string error;
  try {
    work();
  } catch (const RuntimeError& e) {
    error = e.what();
  }
  int32_t failed = error.empty() ? 0 : 1;
  group.allreduce_sum(&failed, 1, CommType::i32);
  if (!error.empty()) throw_runtime_error("{}", error);
  if (failed > 0) throw_runtime_error("{} rank(s) could not {} (their logs say why)", failed, what);
}

}  // namespace trident
