#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "kernels/common/error.h"
#include "core/data/mapped_file.h"
#include "core/data/text_source.h"
#include "core/data/data_test_util.h"

using namespace trident;
using namespace trident::test;

namespace {

std::vector<std::string> documents_of(const DocumentSource& source) {
  std::vector<std::string> texts;
  for (const auto& ids : read_all(source)) texts.push_back(decode_bytes(ids));
  return texts;
}

}  // namespace

TEST_CASE("text documents are the non-empty pieces between separators", "[core][data]") {
  ScratchDir dir("text_split");
  write_file(dir.path / "a.txt", "\n\nfirst doc\n\nsecond\n\n\n\nthird\n\n");
  auto source = open_text_documents(dir.path / "a.txt", "\n\n");
  CHECK(documents_of(*source) == std::vector<std::string>{"first doc", "second", "third"});
  CHECK_THAT(source->describe(), Catch::Contains("a.txt' (3 documents separated by \"\\n\\n\")"));

  write_file(dir.path / "fortunes", "Be yourself.\n%\nThis too shall pass.\n%\n\n%\n\n\n%\n");
  CHECK(documents_of(*open_text_documents(dir.path / "fortunes", "\n%\n")) ==
        std::vector<std::string>{"Be yourself.", "This too shall pass.", "\n"});

  write_file(dir.path / "one.txt", "no separator\n\nhere");
  CHECK(documents_of(*open_text_documents(dir.path / "one.txt", "")) ==
        std::vector<std::string>{"no separator\n\nhere"});

  write_file(dir.path / "empty.txt", "");
  CHECK(open_text_documents(dir.path / "empty.txt", "\n\n")->num_documents() == 0);
  write_file(dir.path / "only_separators.txt", "\n\n\n\n");
  CHECK(open_text_documents(dir.path / "only_separators.txt", "\n\n")->num_documents() == 0);
}

TEST_CASE("byte-level tokens are the bytes, and decode back to the text", "[core][data]") {
  ScratchDir dir("text_bytes");
  const std::string text = "caf\xC3\xA9 \x01\xFF";  // UTF-8 and bytes >= 128 are ids 128..255, not negative
  write_file(dir.path / "t.txt", text);
  auto source = open_text_documents(dir.path / "t.txt", "\n\n");
  std::vector<int32_t> ids = read_document(*source, 0);
  CHECK(ids == std::vector<int32_t>{'c', 'a', 'f', 0xC3, 0xA9, ' ', 1, 255});
  CHECK(decode_bytes(ids) == text);

  std::vector<int32_t> middle(3);
  source->read(0, 2, middle);
  CHECK(middle == std::vector<int32_t>{'f', 0xC3, 0xA9});

  CHECK(decode_bytes(std::vector<int32_t>{'o', 'k', 300}) == "ok\xEF\xBF\xBD");  // U+FFFD for a non-byte id
}

TEST_CASE("text data needs a byte vocabulary and an existing file", "[core][data]") {
  ScratchDir dir("text_errors");
  write_file(dir.path / "t.txt", "hello");
  Config config;
  config.data.kind = "text";
  config.data.path = (dir.path / "t.txt").string();
  CHECK(open_documents(config)->num_documents() == 1);

  config.model.vocab_size = 100;
  CHECK_THAT(error_message<ConfigError>([&] { open_documents(config); }),
             Catch::Contains("data.kind = text reads bytes (token ids 0 to 255), so model.vocab_size must be >= "
                             "256, got model.vocab_size = 100"));

  config.model.vocab_size = 256;
  config.data.path = (dir.path / "missing.txt").string();
  CHECK_THAT(error_message<ConfigError>([&] { open_documents(config); }),
             Catch::Contains("data.path: '" + config.data.path + "' not found (data.kind = text)"));

  config.data.path = dir.path.string();
  CHECK_THAT(error_message<ConfigError>([&] { open_documents(config); }),
             Catch::Contains("data.path: '" + dir.path.string() + "' is a directory, not a regular file"));
  // a FIFO is refused before it is opened (opening it would wait for a writer for ever)
  const std::filesystem::path fifo = dir.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  config.data.path = fifo.string();
  CHECK_THAT(error_message<ConfigError>([&] { open_documents(config); }),
             Catch::Contains("is a FIFO, socket or device, not a regular file"));
  CHECK_THAT(error_message<RuntimeError>([&] { MappedFile file(fifo); }), Catch::Contains("not a regular file"));
}
