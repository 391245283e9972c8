#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/checkpoint/safetensors.h"
#include "kernels/common/error.h"
#include "support/fixtures.h"

using namespace trident;
using namespace trident::test;
namespace fs = std::filesystem;

namespace {

// A file made of an 8-byte length, the given header text and `data_bytes` zero bytes.
fs::path raw_file(const fs::path& dir, const std::string& header, std::size_t data_bytes, uint64_t claimed_size = 0) {
  fs::path p = dir / "raw.safetensors";
  std::ofstream out(p, std::ios::binary);
  uint64_t n = claimed_size ? claimed_size : header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << std::string(data_bytes, '\0');
  return p;
}

}  // namespace

TEST_CASE("safetensors round trip keeps names, dtypes, shapes, bytes and metadata", "[core][safetensors]") {
  fs::path dir = temp_dir("st_roundtrip");
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  std::vector<int64_t> step = {42};
  std::vector<uint16_t> b = {1, 2, 3};  // odd byte count: the next tensor starts unaligned in the data section
  std::vector<float> empty;
  write_safetensors(dir / "w.safetensors",
                    {{"transformer.wte.weight", StDType::F32, {2, 3}, a.data()},
                     {"half", StDType::BF16, {3}, b.data()},
                     {"step", StDType::I64, {}, step.data()},
                     {"empty", StDType::F32, {0, 4}, empty.data()}},
                    {{"format", "pt"}, {"trident", "test"}});
  CHECK_FALSE(fs::exists(dir / "w.safetensors.tmp"));
  SafetensorsFile f(dir / "w.safetensors");
  REQUIRE(f.tensors().size() == 4);
  CHECK(f.metadata().at("format") == "pt");
  const StTensor& w = f.get("transformer.wte.weight", StDType::F32, {2, 3});
  std::vector<float> back(6);
  std::memcpy(back.data(), w.data, sizeof(float) * 6);
  CHECK(back == a);
  int64_t s;
  std::memcpy(&s, f.get("step", StDType::I64, {}).data, 8);
  CHECK(s == 42);
  CHECK(f.get("half").shape == std::vector<int64_t>{3});
  CHECK(f.get("empty").shape == std::vector<int64_t>{0, 4});
  CHECK_THROWS_WITH(f.get("nope"), Catch::Contains("no tensor named 'nope'"));
  CHECK_THROWS_WITH(f.get("half", StDType::F32, {3}), Catch::Contains("is BF16[3], expected F32[3]"));
  // the header alone: the same tensors and metadata, no data held, parts of a tensor read from the file
  SafetensorsFile h(dir / "w.safetensors", SafetensorsFile::Contents::header);
  REQUIRE(h.tensors().size() == 4);
  CHECK(h.metadata() == f.metadata());
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(h.tensors()[i].name == f.tensors()[i].name);
    CHECK(h.tensors()[i].shape == f.tensors()[i].shape);
    CHECK(h.tensors()[i].offset == f.tensors()[i].offset);
    CHECK(h.tensors()[i].data == nullptr);
  }
  std::vector<float> part(3);
  h.read(h.get("transformer.wte.weight"), 2 * sizeof(float), 3 * sizeof(float), part.data());
  CHECK(part == std::vector<float>(a.begin() + 2, a.begin() + 5));
  uint16_t last = 0;
  h.read(h.get("half"), 4, 2, &last);  // after the unaligned tensor's start
  CHECK(last == 3);
  CHECK_THROWS_WITH(h.read(h.get("half"), 4, 4, &last), Catch::Contains("lie outside its 6"));
  fs::remove_all(dir);
}

TEST_CASE("safetensors writer rejects repeated or empty names", "[core][safetensors]") {
  fs::path dir = temp_dir("st_names");
  float x = 1;
  CHECK_THROWS_AS(write_safetensors(dir / "a.safetensors", {{"x", StDType::F32, {1}, &x}, {"x", StDType::F32, {1}, &x}}),
                  RuntimeError);
  CHECK_THROWS_AS(write_safetensors(dir / "a.safetensors", {{"", StDType::F32, {1}, &x}}), RuntimeError);
  CHECK_FALSE(fs::exists(dir / "a.safetensors"));
  fs::remove_all(dir);
}

TEST_CASE("corrupt safetensors files are clear errors", "[core][safetensors]") {
  fs::path dir = temp_dir("st_corrupt");
  struct Case {
    std::string header;
    std::size_t data_bytes;
    uint64_t claimed;
    std::string message;
  };
  const Case cases[] = {
      {"{}", 0, 1000, "runs past the end"},
      {"{not json", 0, 0, "not valid JSON"},
      {"[1,2]", 0, 0, "not a JSON object"},
      {R"({"w":{"dtype":"F99","shape":[1],"data_offsets":[0,4]}})", 4, 0, "unsupported dtype 'F99'"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4, 0, "needs 8 bytes"},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", 4, 0, "outside the 4-byte data section"},
      {R"({"w":{"dtype":"F32","shape":[1]}})", 4, 0, "malformed entry"},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8, 0, "4 trailing bytes"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
       8, 0, "overlaps or leaves a gap"},
      {R"({"__metadata__":{"k":1}})", 0, 0, "is not a string"},
  };
  for (const auto contents : {SafetensorsFile::Contents::all, SafetensorsFile::Contents::header}) {
    INFO((contents == SafetensorsFile::Contents::all ? "whole file" : "header only"));
    for (const Case& c : cases) {
      fs::path p = raw_file(dir, c.header, c.data_bytes, c.claimed);
      INFO(c.header);
      CHECK_THROWS_WITH(SafetensorsFile(p, contents), Catch::Contains(c.message) && Catch::Contains("raw.safetensors"));
    }
    std::ofstream(dir / "short.safetensors") << "abc";
    CHECK_THROWS_WITH(SafetensorsFile(dir / "short.safetensors", contents), Catch::Contains("truncated"));
    CHECK_THROWS_WITH(SafetensorsFile(dir / "missing.safetensors", contents), Catch::Contains("cannot open"));
  }
  fs::remove_all(dir);
}
