#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "core/data/token_file_source.h"
#include "core/data/data_test_util.h"

using namespace trident;
using namespace trident::test;

using Documents = std::vector<std::vector<int32_t>>;

TEST_CASE("uint16 token files split into documents at the end-of-text id", "[core][data]") {
  ScratchDir dir("tokens_u16");
  const fs::path path = dir.path / "train.bin";
  write_file(path, bytes_of<uint16_t>({0, 5, 6, 0, 0, 7, 0, 65000, 9, 0}));
  auto source = open_token_file(path, TokenType::uint16, 0, 65536);
  CHECK(read_all(*source) == Documents{{5, 6}, {7}, {65000, 9}});  // no empty documents, no separators
  CHECK_THAT(source->describe(),
             Catch::Contains("uint16 token file '" + path.string() + "' (3 documents, split at id 0)"));

  std::vector<int32_t> tail(1);
  source->read(2, 1, tail);
  CHECK(tail == std::vector<int32_t>{9});

  auto whole = open_token_file(path, TokenType::uint16, -1, 65536);
  CHECK(read_all(*whole) == Documents{{0, 5, 6, 0, 0, 7, 0, 65000, 9, 0}});

  write_file(path, "");
  CHECK(open_token_file(path, TokenType::uint16, -1, 256)->num_documents() == 0);
}

TEST_CASE("uint32 token files hold ids beyond 16 bits", "[core][data]") {
  ScratchDir dir("tokens_u32");
  const fs::path path = dir.path / "train.bin";
  write_file(path, bytes_of<uint32_t>({70000, 1, 99999, 3, 2}));
  auto source = open_token_file(path, TokenType::uint32, 99999, 100000);
  CHECK(read_all(*source) == Documents{{70000, 1}, {3, 2}});

  Config config;
  config.data.kind = "tokens";
  config.data.path = path.string();
  config.data.token_dtype = "uint32";
  config.data.eot_token = 99999;
  config.model.vocab_size = 100000;
  CHECK(read_all(*open_documents(config)) == Documents{{70000, 1}, {3, 2}});
}

TEST_CASE("bad token files are rejected with the offending id and position", "[core][data]") {
  ScratchDir dir("tokens_bad");
  const fs::path path = dir.path / "bad.bin";
  const std::string name = path.string();

  write_file(path, std::string("\x01\x00\x02", 3));
  CHECK_THAT(error_message<RuntimeError>([&] { open_token_file(path, TokenType::uint16, -1, 256); }),
             Catch::Contains("'" + name + "' is 3 bytes, not a whole number of 2-byte uint16 token ids"));
  write_file(path, bytes_of<uint16_t>({1, 2, 3}));
  CHECK_THAT(error_message<RuntimeError>([&] { open_token_file(path, TokenType::uint32, -1, 256); }),
             Catch::Contains("is 6 bytes, not a whole number of 4-byte uint32 token ids"));

  write_file(path, bytes_of<uint16_t>({1, 2, 300, 4}));
  CHECK_THAT(error_message<ConfigError>([&] { open_token_file(path, TokenType::uint16, -1, 256); }),
             Catch::Contains("token id 300 at token 2 (byte 4) of '" + name + "' is >= model.vocab_size = 256"));

  write_file(path, bytes_of<uint32_t>({1, (int64_t{1} << 31) + 5}));  // must not wrap to a negative int32
  CHECK_THAT(error_message<ConfigError>([&] { open_token_file(path, TokenType::uint32, -1, 50257); }),
             Catch::Contains("token id 2147483653 at token 1 (byte 4)"));

  CHECK_THAT(error_message<ConfigError>([&] { open_token_file(path, TokenType::uint16, 256, 256); }),
             Catch::Contains("data.eot_token = 256 must be < model.vocab_size = 256"));
  CHECK_THAT(error_message<ConfigError>([&] { open_token_file(path, TokenType::uint16, 70000, 100000); }),
             Catch::Contains("data.eot_token = 70000 cannot occur in a uint16 token file (ids 0 to 65535"));

  write_file(path, bytes_of<int32_t>({20240520, 1, 256, 0}));
  CHECK_THAT(error_message<RuntimeError>([&] { open_token_file(path, TokenType::uint16, -1, 65536); }),
             Catch::Contains("starts with llm.c's header (magic 20240520)"));

  Config config;
  config.data.kind = "tokens";
  config.data.path = (dir.path / "none.bin").string();
  CHECK_THAT(error_message<ConfigError>([&] { open_documents(config); }),
             Catch::Contains("data.path: '" + config.data.path + "' not found (data.kind = tokens)"));
}

// Every reader of a corpus draws documents by index; one without any is an error naming the file, wherever it is
// opened (training, trident plan --batch-sequences, bench milp).
TEST_CASE("a text or token file without a document is a config error naming it", "[core][data]") {
  ScratchDir dir("no_documents");
  Config config;
  config.data.kind = "text";
  config.data.path = (dir.path / "empty.txt").string();
  write_file(config.data.path, "");
  CHECK_THAT(error_message<ConfigError>([&] { open_documents(config); }),
             Catch::Contains("data.path = '" + config.data.path + "' (data.kind = text): the file holds no document"));
  config.data.separator = "\n\n";
  write_file(config.data.path, "\n\n\n\n");
  CHECK_THAT(error_message<ConfigError>([&] { open_documents(config); }), Catch::Contains("holds no document"));

  config.data.kind = "tokens";
  config.data.path = (dir.path / "eot.bin").string();
  config.data.eot_token = 7;
  write_file(config.data.path, bytes_of<uint16_t>({7, 7, 7}));
  CHECK_THAT(error_message<ConfigError>([&] { open_documents(config); }),
             Catch::Contains("data.path = '" + config.data.path + "' (data.kind = tokens): the file holds no document"));
  write_file(config.data.path, "");
  CHECK_THAT(error_message<ConfigError>([&] { open_documents(config); }), Catch::Contains("holds no document"));
}
