#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "core/common/passive_wait.h"

int main(int argc, char** argv) {
  trident::wait_passively_unless_told(argv);
  return Catch::Session().run(argc, argv);
}
