#pragma once
// Helpers for the core/data tests: a scratch directory, raw files, an in-memory corpus, and error messages.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/data/document_source.h"
#include "support/files.h"

namespace trident::test {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed at scope exit.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name)
      : path(fs::temp_directory_path() / ("trident_test_data_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
};

inline void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The little-endian bytes of `values` stored as T.
template <class T>
std::string bytes_of(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) {
    auto t = static_cast<T>(v);
    out.append(reinterpret_cast<const char*>(&t), sizeof t);
  }
  return out;
}

inline std::vector<int32_t> read_document(const DocumentSource& source, int64_t doc) {
  std::vector<int32_t> ids(static_cast<std::size_t>(source.document_length(doc)));
  source.read(doc, 0, ids);
  return ids;
}

inline std::vector<std::vector<int32_t>> read_all(const DocumentSource& source) {
  std::vector<std::vector<int32_t>> documents;
  for (int64_t d = 0; d < source.num_documents(); ++d) documents.push_back(read_document(source, d));
  return documents;
}

// A corpus held in memory.
class MemorySource final : public DocumentSource {
 public:
  explicit MemorySource(std::vector<std::vector<int32_t>> documents) : documents_(std::move(documents)) {}
  int64_t num_documents() const override { return static_cast<int64_t>(documents_.size()); }
  int64_t document_length(int64_t doc) const override { return static_cast<int64_t>(documents_.at(doc).size()); }
  std::string describe() const override { return "memory corpus"; }

 private:
  void read_tokens(int64_t doc, int64_t start, std::span<int32_t> out) const override {
    std::copy_n(documents_[doc].begin() + start, out.size(), out.begin());
  }
  std::vector<std::vector<int32_t>> documents_;
};

// The message of the E that f() throws; a failed check when it throws nothing.
template <class E, class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL_CHECK("no exception was thrown");
  return "";
}

}  // namespace trident::test
