#pragma once
// The parallel.<name>.* sections the strategies declare in their own folders (parallel/<name>/config.h): each a plain
// struct with its defaults and an ==, held here by type, so core/ names none of them. A section never set reads as
// its defaults; two Configs are equal when every section is.
#include <map>
#include <memory>
#include <typeindex>

namespace trident {

class ConfigSections {
 public:
  ConfigSections() = default;
  ConfigSections(const ConfigSections& other) { *this = other; }
  ConfigSections& operator=(const ConfigSections& other) {
    if (this == &other) return *this;
    sections_.clear();
    for (const auto& [type, section] : other.sections_) sections_.emplace(type, section->clone());
    return *this;
  }
  ConfigSections(ConfigSections&&) noexcept = default;
  ConfigSections& operator=(ConfigSections&&) noexcept = default;

  template <class T>
  const T& get() const {
    const auto found = sections_.find(typeid(T));
    if (found == sections_.end()) {
      static const T defaults{};
      return defaults;
    }
    return static_cast<const Holder<T>&>(*found->second).value;
  }
  template <class T>
  T& get() {
    std::unique_ptr<Section>& section = sections_[typeid(T)];
    if (!section) section = std::make_unique<Holder<T>>();
    return static_cast<Holder<T>&>(*section).value;
  }

  bool operator==(const ConfigSections& other) const {
    for (const auto& [type, section] : sections_) {
      const auto theirs = other.sections_.find(type);
      if (!section->equals(theirs == other.sections_.end() ? nullptr : theirs->second.get())) return false;
    }
    for (const auto& [type, section] : other.sections_)
      if (!sections_.contains(type) && !section->equals(nullptr)) return false;
    return true;
  }

 private:
  struct Section {
    virtual ~Section() = default;
    virtual std::unique_ptr<Section> clone() const = 0;
    virtual bool equals(const Section* other) const = 0;  // nullptr: a section never set, its defaults
  };
  template <class T>
  struct Holder final : Section {
    T value{};
    std::unique_ptr<Section> clone() const override { return std::make_unique<Holder>(*this); }
    bool equals(const Section* other) const override {
      return other ? value == static_cast<const Holder&>(*other).value : value == T{};
    }
  };
  std::map<std::type_index, std::unique_ptr<Section>> sections_;
};

}  // namespace trident
