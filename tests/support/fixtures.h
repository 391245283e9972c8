#pragma once
// Shared test fixtures: a fresh scratch directory and a memory budget large enough for the tests' tiny models.
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <string>

#include "core/tensor/allocator.h"

namespace trident::test {

// An empty directory under the system temp dir, unique to this test name and process.
inline std::filesystem::path temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("trident_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

inline Allocator& test_allocator() {
  static Allocator allocator({.name = "cpu", .budget_bytes = std::size_t(1) << 30});
  return allocator;
}

}  // namespace trident::test
