#include "core/metrics/metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fstream>
#include <string>

#include "core/common/atomic_file.h"
#include "kernels/common/error.h"

namespace trident {

MetricsWriter::MetricsWriter(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_runtime_error("cannot open metrics file '{}': {}", path.string(), std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsWriter::write(const nlohmann::ordered_json& record) {
  std::string line = record.dump() + "\n";
  ssize_t n = ::write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size()))
    throw_runtime_error("cannot append to metrics file '{}': {}", path_.string(),
                        n < 0 ? std::strerror(errno) : "short write");
}

void drop_metrics_from_step(const std::filesystem::path& path, int64_t first_dropped) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.contains("step") && record["step"].is_number_integer() &&
        record["step"].get<int64_t>() >= first_dropped)
      continue;
    kept += line + "\n";
  }
  write_file_atomically(path, kept);
}

}  // namespace trident
