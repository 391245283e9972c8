#pragma once
// The config schema: one table (schema.cpp) lists every key with its place in Config, its type, what values it
// allows and a one-line doc. Loading, --set overrides, validation and to_yaml are all driven from it, so adding
// a key is one line there (plus its row in configs/README.md, which a test checks).
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/config/config.h"

namespace trident {

// Where a key's value lives: config.*section.*field, as a mutable and a read-only accessor.
template <class T>
struct Member {
  std::function<T&(Config&)> ref;
  std::function<const T&(const Config&)> cref;
};

template <class Section, class T>
Member<T> member(Section Config::*section, T Section::*field) {
  return {[=](Config& c) -> T& { return c.*section.*field; },
          [=](const Config& c) -> const T& { return c.*section.*field; }};
}

// An integer in [min, max].
struct IntField {
  Member<int64_t> member;
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

// A finite number between min and max; each bound is inclusive unless marked open.
struct FloatField {
  Member<double> member;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;
};

// A string: one of `choices` when given, otherwise any string (non-empty when `required`).
struct StringField {
  Member<std::string> member;
  std::vector<std::string_view> choices = {};
  bool required = false;
  // Old spellings still read, each as the choice it names, with a warning that says so: {old, choice}.
  std::vector<std::pair<std::string_view, std::string_view>> aliases = {};
};

// true or false.
struct BoolField {
  Member<bool> member;
};

struct Key {
  std::string_view path;  // dotted: "model.n_layer"
  std::variant<IntField, FloatField, StringField, BoolField> field;
  std::string_view doc;
};

// Every key, grouped by section, in the order to_yaml prints them.
const std::vector<Key>& schema();

// The dotted paths of all keys, in schema order.
std::vector<std::string> config_keys();

}  // namespace trident
