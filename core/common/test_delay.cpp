#include "core/common/test_delay.h"

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "kernels/common/error.h"

namespace trident {

void test_delay(const char* variable) {
  const char* value = std::getenv(variable);
  if (value == nullptr) return;
  const std::string_view text(value);
  int64_t ms = -1;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (error != std::errc() || end != text.data() + text.size() || ms < 0)
    throw_config_error("{}='{}' is not a number of milliseconds", variable, text);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace trident
