#pragma once
// One measurement row, printed as an aligned table row or as a JSON line; a long measurement's progress.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trident::bench {

struct Row {
  std::vector<std::pair<std::string, std::string>> text;     // column -> value, printed as given
  std::vector<std::pair<std::string, double>> numbers;       // column -> value
};

class Report {
 public:
  Report(std::string title, bool json) : title_(std::move(title)), json_(json) {}
  void add(Row row) { rows_.push_back(std::move(row)); }
  void print() const;  // a markdown table (or JSON lines) on stdout

 private:
  std::string title_;
  bool json_;
  std::vector<Row> rows_;
};

// What a long measurement is doing: one line on stderr per item ("bench gemm [3/72] openblas, lm_head"), so a user
// sees it move while stdout stays the table (or JSON lines). Silent on every rank but 0.
class Progress {
 public:
  Progress(std::string command, int64_t total, bool silent = false)
      : command_(std::move(command)), total_(total), silent_(silent) {}
  void step(std::string_view item);

 private:
  std::string command_;
  int64_t total_, done_ = 0;
  bool silent_;
};

}  // namespace trident::bench
