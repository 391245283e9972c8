#pragma once
// Token ids as files store them: a little-endian integer type per file (flat token files, Megatron .bin files).
// Loads go through memcpy because nothing guarantees alignment inside a mapped file, and ids are checked in the
// file's own type before narrowing to int32 (a uint32 id of 2^31 would otherwise wrap to a valid-looking one).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace trident {

static_assert(std::endian::native == std::endian::little, "token files are little-endian; so must the host be");

enum class TokenType { uint8, int8, int16, uint16, int32, uint32, int64 };

std::string_view token_type_name(TokenType type);  // "uint16", ...
int64_t token_type_size(TokenType type);            // bytes per id

// Calls f(T{}) with T the C++ type of `type`, so a loop over a file's ids is compiled once per type.
template <class F>
decltype(auto) visit_token_type(TokenType type, F&& f) {
  switch (type) {
    case TokenType::uint8: return f(uint8_t{});
    case TokenType::int8: return f(int8_t{});
    case TokenType::int16: return f(int16_t{});
    case TokenType::uint16: return f(uint16_t{});
    case TokenType::int32: return f(int32_t{});
    case TokenType::uint32: return f(uint32_t{});
    case TokenType::int64: break;
  }
  return f(int64_t{});
}

template <class T>
T load_le(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

// The index of the first of `count` ids at `p` outside [0, vocab_size), or -1 when all are valid.
int64_t find_invalid_token(TokenType type, const std::byte* p, int64_t count, int64_t vocab_size);

// The id at index i (for error messages).
int64_t token_at(TokenType type, const std::byte* p, int64_t i);

// Copies `count` ids at `p` to `out`; they must have been validated (each fits int32).
void decode_tokens(TokenType type, const std::byte* p, int64_t count, int32_t* out);

}  // namespace trident
