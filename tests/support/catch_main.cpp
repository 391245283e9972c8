#include "core/common/passive_wait.h"
#include "support/catch_session.h"

int main(int argc, char** argv) {
  trident::wait_passively_unless_told(argv);
  trident::test::CatchSession session(argc, argv);
  if (session.parse_error() != 0) return session.parse_error();
  return session.run();
}
