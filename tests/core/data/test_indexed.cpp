#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "kernels/common/error.h"
#include "core/data/indexed_dataset.h"
#include "core/data/data_test_util.h"

using namespace trident;
using namespace trident::test;

namespace {

using Documents = std::vector<std::vector<int32_t>>;

const fs::path kMegatronLayout = fs::path(__FILE__).parent_path() / "megatron_layout.py";
constexpr int64_t kVocab = int64_t{1} << 24;

// tests/core/data/megatron_layout.py's DOCUMENTS, each the concatenation of its sequences.
const Documents kPythonDocuments = {{1, 2, 3, 4, 5}, {6}, {}, {7, 8}, {9, 10, 11, 12}, {0, 127, 13}};

void run_python(const std::string& arguments) {
  std::string command = fmt::format("/usr/bin/python3 '{}' {}", kMegatronLayout.string(), arguments);
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
}

// Overwrites the bytes of `file` at `offset` with `bytes`.
void patch(const fs::path& file, std::size_t offset, const std::string& bytes) {
  std::string content = read_file(file);
  content.replace(offset, bytes.size(), bytes);
  write_file(file, content);
}

}  // namespace

TEST_CASE("indexed datasets round-trip in every Megatron integer dtype", "[core][data]") {
  ScratchDir dir("indexed_roundtrip");
  const std::pair<TokenType, int32_t> types[] = {{TokenType::uint8, 255},      {TokenType::int8, 127},
                                                 {TokenType::int16, 32767},    {TokenType::uint16, 65535},
                                                 {TokenType::int32, 16777215}, {TokenType::int64, 16777215}};
  for (auto [type, largest] : types) {
    INFO(token_type_name(type));
    const Documents documents = {{1, 2, 3}, {}, {largest, 0, 7}, {5}};
    const fs::path prefix = dir.path / std::string(token_type_name(type));
    write_indexed_dataset(prefix, documents, type);
    CHECK_FALSE(fs::exists(prefix.string() + ".idx.tmp"));
    auto source = open_indexed_dataset(prefix, kVocab);
    CHECK(read_all(*source) == documents);
    CHECK_THAT(source->describe(), Catch::Contains("(4 documents, 4 sequences, " + std::string(token_type_name(type))));
  }
}

TEST_CASE("indexed datasets match Megatron's layout as Python writes and reads it", "[core][data]") {
  ScratchDir dir("indexed_python");
  for (const char* name : {"uint8", "int8", "int16", "uint16", "int32", "int64"}) {
    INFO(name);
    // Python writes one sequence per sentence; Trident reads each document as their concatenation.
    const std::string sentences = (dir.path / fmt::format("sentences_{}", name)).string();
    run_python(fmt::format("write '{}' {} sentences", sentences, name));
    auto source = open_indexed_dataset(sentences, kVocab);
    CHECK(read_all(*source) == kPythonDocuments);
    std::vector<int32_t> across(3);  // tokens 1..3 of document 0 span its two sequences
    source->read(0, 1, across);
    CHECK(across == std::vector<int32_t>{2, 3, 4});

    // One sequence per document: Trident's writer produces the same bytes, and Python reads them back.
    const std::string python = (dir.path / fmt::format("python_{}", name)).string();
    const std::string trident = (dir.path / fmt::format("trident_{}", name)).string();
    run_python(fmt::format("write '{}' {} documents", python, name));
    const TokenType type = name == std::string("uint8")    ? TokenType::uint8
                           : name == std::string("int8")   ? TokenType::int8
                           : name == std::string("int16")  ? TokenType::int16
                           : name == std::string("uint16") ? TokenType::uint16
                           : name == std::string("int32")  ? TokenType::int32
                                                           : TokenType::int64;
    write_indexed_dataset(trident, kPythonDocuments, type);
    CHECK(read_file(trident + ".idx") == read_file(python + ".idx"));
    CHECK(read_file(trident + ".bin") == read_file(python + ".bin"));
    run_python(fmt::format("check '{}' {}", trident, name));
  }
}

TEST_CASE("malformed or mismatched .idx/.bin files are rejected with what is wrong", "[core][data]") {
  ScratchDir dir("indexed_bad");
  const fs::path prefix = dir.path / "bad";
  const fs::path idx = prefix.string() + ".idx";
  const fs::path bin = prefix.string() + ".bin";
  const std::string p = prefix.string();
  // 3 sequences, 4 document indices: lengths at byte 34, pointers at 46, document indices at 70; 102 bytes in all.
  // The .bin holds 9 uint16 ids: 18 bytes.
  auto reset = [&] { write_indexed_dataset(prefix, {{1, 2, 3}, {4, 5}, {6, 7, 8, 9}}, TokenType::uint16); };
  auto error = [&] { return error_message<RuntimeError>([&] { open_indexed_dataset(prefix, 256); }); };

  struct Case {
    std::string name;
    std::function<void()> damage;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"short header", [&] { write_file(idx, read_file(idx).substr(0, 20)); },
       p + ".idx: 20 bytes, shorter than the 34-byte header of a Megatron index"},
      {"magic", [&] { patch(idx, 0, "X"); },
       p + ".idx: not a Megatron-LM indexed dataset index (it does not start with \"MMIDIDX\\0\\0\")"},
      {"version", [&] { patch(idx, 9, bytes_of<uint64_t>({2})); },
       p + ".idx: version 2; Megatron indexes have version 1"},
      {"float dtype", [&] { patch(idx, 17, bytes_of<uint8_t>({7})); },
       p + ".idx: dtype code 7 is not a token type (a float dtype)"},
      {"unknown dtype", [&] { patch(idx, 17, bytes_of<uint8_t>({9})); },
       p + ".idx: dtype code 9 is not a token type (Megatron's codes are 1 to 8)"},
      {"truncated index", [&] { write_file(idx, read_file(idx).substr(0, 94)); },
       p + ".idx: 94 bytes, but its header (3 sequences, 4 document indices) needs 102 bytes"},
      {"multimodal index", [&] { write_file(idx, read_file(idx) + std::string(3, '\0')); },
       "needs 102 bytes (sequence modes of multimodal datasets are not supported)"},
      {"absurd sequence count", [&] { patch(idx, 18, bytes_of<uint64_t>({int64_t{1} << 60})); },
       p + ".idx: 102 bytes, but its header (1152921504606846976 sequences, 4 document indices) needs more"},
      {"first document index", [&] { patch(idx, 70, bytes_of<int64_t>({1})); },
       p + ".idx: document index 0 is 1, not 0"},
      {"decreasing document indices", [&] { patch(idx, 86, bytes_of<int64_t>({0})); },
       p + ".idx: document indices decrease: index 2 is 0 after 1"},
      {"last document index", [&] { patch(idx, 94, bytes_of<int64_t>({2})); },
       p + ".idx: the last document index is 2, not the sequence count 3"},
      {"negative length", [&] { patch(idx, 38, bytes_of<int32_t>({-4})); },
       p + ".idx does not match " + p + ".bin: sequence 1 has negative length -4"},
      {"pointer outside the .bin", [&] { patch(idx, 54, bytes_of<int64_t>({9999})); },
       p + ".idx does not match " + p + ".bin: sequence 1 starts at byte 9999, outside the 18-byte .bin"},
      {"truncated .bin", [&] { write_file(bin, read_file(bin).substr(0, 16)); },
       p + ".idx does not match " + p + ".bin: sequence 2 ends at byte 18, past the end of the 16-byte .bin"},
      {"a sequence apart from the one before", [&] { patch(idx, 54, bytes_of<int64_t>({8})); },
       p + ".idx does not match " + p + ".bin: sequence 1 starts at byte 8, not at byte 6 where the sequence before "
           "it ends (its .idx says uint16 ids)"},
      {"the int32 .bin of the same documents", [&] {
         write_indexed_dataset(dir.path / "wide", {{1, 2, 3}, {4, 5}, {6, 7, 8, 9}}, TokenType::int32);
         fs::copy_file(dir.path / "wide.bin", bin, fs::copy_options::overwrite_existing);
       },
       p + ".idx does not match " + p + ".bin: its sequences hold 9 tokens (18 bytes as uint16 ids), but the .bin "
           "has 36 bytes"},
      {"odd .bin", [&] { write_file(bin, read_file(bin).substr(0, 17)); },
       p + ".bin: 17 bytes, not a whole number of 2-byte uint16 ids (the dtype in its .idx)"},
      {"negative id", [&] { patch(idx, 17, bytes_of<uint8_t>({3})); patch(bin, 10, bytes_of<int16_t>({-3})); },
       "token id -3 at token 0 of sequence 2 (document 2) of " + p + ".bin is negative"},
      {"missing .bin", [&] { fs::remove(bin); }, "cannot open '" + p + ".bin': No such file or directory"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    reset();
    c.damage();
    CHECK_THAT(error(), Catch::Contains(c.message));
  }

  reset();
  CHECK_THAT(error_message<ConfigError>([&] { open_indexed_dataset(prefix, 9); }),
             Catch::Contains("token id 9 at token 3 of sequence 2 (document 2) of " + p +
                             ".bin is >= model.vocab_size = 9"));
  fs::remove(bin);
  Config config;
  config.data.kind = "indexed";
  config.data.path = p;
  CHECK_THAT(error_message<ConfigError>([&] { open_documents(config); }),
             Catch::Contains("data.path: '" + p + ".bin' not found (data.kind = indexed reads PREFIX.bin and "
                             "PREFIX.idx)"));
}

TEST_CASE("the indexed writer refuses ids its dtype cannot hold", "[core][data]") {
  ScratchDir dir("indexed_writer");
  CHECK_THAT(error_message<RuntimeError>([&] { write_indexed_dataset(dir.path / "x", {{1}}, TokenType::uint32); }),
             Catch::Contains("Megatron indexed datasets have no uint32 dtype"));
  CHECK_THAT(
      error_message<RuntimeError>([&] { write_indexed_dataset(dir.path / "x", {{1}, {2, 300}}, TokenType::uint8); }),
      Catch::Contains("token id 300 of document 1 does not fit uint8"));
  CHECK_FALSE(fs::exists(dir.path / "x.bin"));
}
