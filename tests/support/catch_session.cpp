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

int CatchSession::run() { return impl_->session.run(); }

}  // namespace trident::test
