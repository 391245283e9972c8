#pragma once
// A whole file's bytes, for tests that check what a program wrote.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace trident::test {

// Empty when the file cannot be opened.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace trident::test
