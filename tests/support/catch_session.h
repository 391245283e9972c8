#pragma once
// Catch2's implementation is compiled once, in catch_session.cpp (the trident_catch library): every test main runs
// the tests through this class instead of defining CATCH_CONFIG_RUNNER itself, which would compile all of Catch2
// again in its own translation unit (about 25 s each).
#include <memory>

namespace trident::test {

class CatchSession {
 public:
  CatchSession(int argc, char** argv);  // parses the command line; Catch2 prints what it rejects
  ~CatchSession();
  CatchSession(const CatchSession&) = delete;
  CatchSession& operator=(const CatchSession&) = delete;

  int parse_error() const { return parse_error_; }  // non-zero: the command line was rejected, exit with it
  bool only_lists() const;  // the tests are listed, not run (ctest asks at build time): no MPI or device needed
  int run();  // 0 when every test passed, else 1 (never 77, ctest's skip)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int parse_error_ = 0;
};

}  // namespace trident::test
