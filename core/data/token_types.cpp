#include "core/data/token_types.h"

namespace trident {

std::string_view token_type_name(TokenType type) {
  switch (type) {
    case TokenType::uint8: return "uint8";
    case TokenType::int8: return "int8";
    case TokenType::int16: return "int16";
    case TokenType::uint16: return "uint16";
    case TokenType::int32: return "int32";
    case TokenType::uint32: return "uint32";
    case TokenType::int64: break;
  }
  return "int64";
}

int64_t token_type_size(TokenType type) {
  return visit_token_type(type, [](auto zero) { return static_cast<int64_t>(sizeof zero); });
}

int64_t find_invalid_token(TokenType type, const std::byte* p, int64_t count, int64_t vocab_size) {
  return visit_token_type(type, [&](auto zero) -> int64_t {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i) {
      auto id = static_cast<int64_t>(load_le<T>(p + i * static_cast<int64_t>(sizeof(T))));
      if (id < 0 || id >= vocab_size) return i;
    }
    return -1;
  });
}

int64_t token_at(TokenType type, const std::byte* p, int64_t i) {
  return visit_token_type(type, [&](auto zero) {
    using T = decltype(zero);
    return static_cast<int64_t>(load_le<T>(p + i * static_cast<int64_t>(sizeof(T))));
  });
}

void decode_tokens(TokenType type, const std::byte* p, int64_t count, int32_t* out) {
  visit_token_type(type, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<int32_t>(load_le<T>(p + i * static_cast<int64_t>(sizeof(T))));
  });
}

}  // namespace trident
