#pragma once
// metrics.jsonl: one JSON object per line, one line per step. Each line goes out in a single append-mode write,
// so a crash can cut the file only between lines, and readers (scripts/plot.py, tests) never see half a record.
#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace trident {

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::filesystem::path& path);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  void write(const nlohmann::ordered_json& record);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// A resumed run redoes the steps after its checkpoint: drops the records of step >= `first_dropped` from the file
// (rewritten atomically), so the file again holds one record per step. Unparseable lines are kept.
void drop_metrics_from_step(const std::filesystem::path& path, int64_t first_dropped);

}  // namespace trident
