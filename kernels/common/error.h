#pragma once
// Errors a user can act on. Each carries the process exit code the CLI returns for it:
// 2 for a usage or configuration error (fix the command or the file), 1 for a runtime failure.
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace trident {

class Error : public std::runtime_error {
 public:
  Error(int exit_code, std::string message) : std::runtime_error(std::move(message)), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// A bad command line, config file or config value (exit code 2).
class ConfigError : public Error {
 public:
  explicit ConfigError(std::string message) : Error(2, std::move(message)) {}
};

// Something failed while running: out of memory budget, I/O, a numerical fault (exit code 1).
class RuntimeError : public Error {
 public:
  explicit RuntimeError(std::string message) : Error(1, std::move(message)) {}
};

template <class... Args>
[[noreturn]] void throw_config_error(fmt::format_string<Args...> f, Args&&... args) {
  throw ConfigError(fmt::format(f, std::forward<Args>(args)...));
}

template <class... Args>
[[noreturn]] void throw_runtime_error(fmt::format_string<Args...> f, Args&&... args) {
  throw RuntimeError(fmt::format(f, std::forward<Args>(args)...));
}

// Internal invariant (a bug in Trident, not in the user's input): fails loudly in every build type.
#define TRIDENT_CHECK(cond, ...)                                                                   \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      throw ::trident::RuntimeError(fmt::format("internal check failed at {}:{}: {} ({})", __FILE__, \
                                                __LINE__, #cond, fmt::format(__VA_ARGS__)));       \
  } while (0)

}  // namespace trident
