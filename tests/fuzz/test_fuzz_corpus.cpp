// Every seed and every input a fuzzer once found (tests/fuzz/<target>/), replayed through its target in the
// normal suite: each is accepted or refused with a Trident error, and the seeds that are well-formed files stay
// accepted (a seed named ok_* must be accepted, bad_* refused), so a reader that starts refusing good files fails here.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/fuzz/targets.h"

namespace fs = std::filesystem;

TEST_CASE("every fuzz seed and regression input is accepted or refused cleanly", "[fuzz]") {
  const fs::path root = fs::path(TRIDENT_SOURCE_DIR) / "tests" / "fuzz";
  for (const trident::fuzz::Target& target : trident::fuzz::targets()) {
    const fs::path dir = root / std::string(target.name);
    INFO("target " << target.name);
    REQUIRE(fs::is_directory(dir));
    int files = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
      const std::string name = entry.path().filename().string();
      INFO("input " << entry.path().string());
      const bool accepted = trident::fuzz::run_target(target, bytes);
      if (name.starts_with("ok_")) CHECK(accepted);
      if (name.starts_with("bad_")) CHECK_FALSE(accepted);
      ++files;
    }
    CHECK(files > 0);
  }
}
