#define CATCH_CONFIG_RUNNER
#include "support/catch_session.h"

#include <catch2/catch.hpp>

namespace trident::test {

struct CatchSession::Impl {
  Catch::Session session;
};

CatchSession::CatchSession(int argc, char** argv) : impl_(std::make_unique<Impl>()) {
  parse_error_ = impl_->session.applyCommandLine(argc, argv);
}

CatchSession::~CatchSession() = default;

bool CatchSession::only_lists() const {
  const auto& config = impl_->session.config();
  return config.listTestNamesOnly() || config.listTests();
}

// Catch2 exits with the number of failed assertions (up to 255), and ctest reads 77 as a skip in the tests that
// declare SKIP_RETURN_CODE 77: 77 failures would pass as skipped. Every failure is exit code 1.
int CatchSession::run() { return impl_->session.run() == 0 ? 0 : 1; }

}  // namespace trident::test
