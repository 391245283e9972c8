#include "core/metrics/bench_report.h"

#include <algorithm>
#include <cstdio>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace trident::bench {

namespace {
std::string format_number(double v) {
  if (v != 0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-2)) return fmt::format("{:.3g}", v);
  return fmt::format("{:.2f}", v);
}
}  // namespace

void Report::print() const {
  if (json_) {
    for (const Row& row : rows_) {
      nlohmann::ordered_json j;
      j["bench"] = title_;
      for (const auto& [k, v] : row.text) j[k] = v;
      for (const auto& [k, v] : row.numbers) j[k] = v;
      fmt::print("{}\n", j.dump());
    }
    return;
  }
  if (rows_.empty()) return;
  std::vector<std::string> header;
  for (const auto& [k, v] : rows_[0].text) header.push_back(k);
  for (const auto& [k, v] : rows_[0].numbers) header.push_back(k);
  std::vector<std::vector<std::string>> cells;
  for (const Row& row : rows_) {
    std::vector<std::string> line;
    for (const auto& [k, v] : row.text) line.push_back(v);
    for (const auto& [k, v] : row.numbers) line.push_back(format_number(v));
    cells.push_back(std::move(line));
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& line : cells) width[c] = std::max(width[c], line[c].size());
  }
  auto print_line = [&](const std::vector<std::string>& line) {
    fmt::print("|");
    for (std::size_t c = 0; c < line.size(); ++c) fmt::print(" {:<{}} |", line[c], width[c]);
    fmt::print("\n");
  };
  fmt::print("\n## {}\n\n", title_);
  print_line(header);
  fmt::print("|");
  for (std::size_t w : width) fmt::print("{}|", std::string(w + 2, '-'));
  fmt::print("\n");
  for (const auto& line : cells) print_line(line);
}

void Progress::step(std::string_view item) {
  ++done_;
  if (silent_) return;
  fmt::print(stderr, "{} [{}/{}] {}\n", command_, done_, total_, item);
  std::fflush(stderr);
}

}  // namespace trident::bench
