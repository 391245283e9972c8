#pragma once
// The config schema: one table lists every key with its place in Config, its type, what values it allows and a
// one-line doc. Loading, --set overrides, validation and to_yaml are all driven from it, so adding a key is one line
// (plus its row in configs/README.md, which a test checks). The common keys are in schema.cpp; each strategy declares
// its parallel.<name>.* section in its own folder (parallel/<name>/config.cpp) and registers it here, and the
// strategy registry (parallel/select/registry.cpp) registers the names parallel.strategy accepts.
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

// Where a key of a strategy's section lives: config.parallel.sections.get<Section>().*field.
template <class Section, class T>
Member<T> section_member(T Section::*field) {
  return {[=](Config& c) -> T& { return c.parallel.sections.get<Section>().*field; },
          [=](const Config& c) -> const T& { return c.parallel.sections.get<Section>().*field; }};
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

// The relations between keys a section checks once every value is read.
class KeyRelations {
 public:
  virtual ~KeyRelations() = default;
  // Unless `ok`, a ConfigError "a = value (where it was set) relation b = value (where)", naming both keys.
  virtual void require(bool ok, std::string_view a, std::string_view relation, std::string_view b) const = 0;
};

// A strategy's parallel.<name>.* keys, declared in its folder.
struct ConfigSection {
  std::vector<Key> keys;
  void (*check)(const Config& config, const KeyRelations& relations) = nullptr;  // relations between keys, if any
};
// Adds a section's keys to the schema, after the common parallel.* keys, sections in the order of their paths.
// Called at static initialisation, in the file that defines the section's accessor (so a program that reads the
// section has its keys); returns true.
bool register_config_section(const ConfigSection& section);
// Each registered section's check, in turn.
void check_config_sections(const Config& config, const KeyRelations& relations);

// The values parallel.strategy accepts beside auto: the names of the registered strategies.
void register_strategy_names(const std::vector<std::string>& names);
void unregister_strategy_names(const std::vector<std::string>& names);

// Every key, grouped by section, in the order to_yaml prints them.
const std::vector<Key>& schema();

// The dotted paths of all keys, in schema order.
std::vector<std::string> config_keys();

}  // namespace trident
