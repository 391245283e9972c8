#pragma once
// One measurement row, printed as an aligned table row or as a JSON line.
#include <string>
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

}  // namespace trident::bench
