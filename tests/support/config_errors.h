#pragma once
// A config that must be refused: `load` throws a ConfigError (exit code 2) whose message holds every fragment.
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"

namespace trident::test {

inline void check_config_error(const std::function<void()>& load, const std::vector<std::string>& fragments) {
  try {
    load();
    FAIL_CHECK("no ConfigError was thrown");
  } catch (const ConfigError& e) {
    CHECK(e.exit_code() == 2);
    for (const std::string& fragment : fragments) CHECK_THAT(e.what(), Catch::Contains(fragment));
  }
}

}  // namespace trident::test
