// Loading, validating and printing configs, all driven by the key table (schema.h). Values are checked as
// they are read, so an error points at the line that caused it; relations between keys are checked at the end.
#include "core/config/config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/common/atomic_file.h"
#include "core/common/text_file.h"
#include "kernels/common/error.h"
#include "core/config/schema.h"

namespace trident {
namespace fs = std::filesystem;
namespace {

// ---- keys and sections ---------------------------------------------------------------------------------

const Key* find_key(std::string_view path) {
  for (const Key& key : schema())
    if (key.path == path) return &key;
  return nullptr;
}

// The names directly inside `section` ("" is the top level), in schema order.
std::vector<std::string> children(std::string_view section) {
  std::string prefix = section.empty() ? "" : fmt::format("{}.", section);
  std::vector<std::string> names;
  for (const Key& key : schema()) {
    if (!key.path.starts_with(prefix)) continue;
    std::string_view rest = key.path.substr(prefix.size());
    std::string name(rest.substr(0, rest.find('.')));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

// "model.linear.output_gate" -> {"model", "linear", "output_gate"}
std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

bool is_section(std::string_view path) { return !path.empty() && !children(path).empty(); }

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitute = diagonal + (a[i - 1] != b[j - 1]);
      diagonal = row[j];
      row[j] = std::min({substitute, row[j] + 1, row[j - 1] + 1});
    }
  }
  return row[b.size()];
}

// The key or section path nearest to `path`, when it is close enough to be a likely typo.
std::optional<std::string_view> nearest(std::string_view path) {
  std::string_view best;
  size_t best_distance = SIZE_MAX;
  for (const Key& key : schema()) {
    for (size_t dot = key.path.find('.');; dot = key.path.find('.', dot + 1)) {
      std::string_view candidate = key.path.substr(0, dot);  // each enclosing section, then the key itself
      if (size_t d = edit_distance(path, candidate); d < best_distance) {
        best = candidate;
        best_distance = d;
      }
      if (dot == std::string_view::npos) break;
    }
  }
  size_t name_length = path.size() - (path.rfind('.') + 1);  // rfind gives npos (+1 = 0) without a dot
  if (best_distance > std::max<size_t>(2, name_length / 2)) return std::nullopt;
  return best;
}

// "unknown key 'model.n_layers' (did you mean 'model.n_layer'?); keys in 'model': n_layer, n_embd, ..."
std::string unknown_key(const std::string& path) {
  if (is_section(path)) {
    return fmt::format("'{}' is a section, not a key; keys in '{}': {}", path, path,
                       fmt::join(children(path), ", "));
  }
  size_t dot = path.rfind('.');
  std::string message = fmt::format("unknown {} '{}'", dot == std::string::npos ? "section" : "key", path);
  if (auto guess = nearest(path)) message += fmt::format(" (did you mean '{}'?)", *guess);
  std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
  if (is_section(parent))
    return fmt::format("{}; keys in '{}': {}", message, parent, fmt::join(children(parent), ", "));
  return fmt::format("{}; sections: {}", message, fmt::join(children(""), ", "));
}

// ---- values --------------------------------------------------------------------------------------------

// Where a value came from ("x.yaml:5:12" or "--set model.n_layer=x") and the key it is for.
struct Site {
  std::string where;
  std::string_view path;

  template <class... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> problem, Args&&... args) const {
    throw_config_error("{}: {}: {}", where, path, fmt::format(problem, std::forward<Args>(args)...));
  }
};

std::string expected(const IntField&) { return "an integer"; }
std::string expected(const FloatField&) { return "a finite number"; }
std::string expected(const BoolField&) { return "true or false"; }
std::string expected(const StringField& f) {
  if (!f.choices.empty()) return fmt::format("one of {}", fmt::join(f.choices, ", "));
  return f.required ? "a non-empty string" : "a string";
}

std::string allowed(const IntField& f) {
  if (f.max == std::numeric_limits<int64_t>::max()) return fmt::format(">= {}", f.min);
  return fmt::format("{} to {}", f.min, f.max);
}
std::string allowed(const FloatField& f) {
  if (std::isinf(f.max)) return fmt::format("{} {}", f.min_open ? ">" : ">=", f.min);
  return fmt::format("{} {} value {} {}", f.min, f.min_open ? "<" : "<=", f.max_open ? "<" : "<=", f.max);
}

std::string kind(const YAML::Node& node) {
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a sequence";
  if (node.IsNull()) return "no value";
  return fmt::format("'{}'", node.Scalar());
}

int64_t parse(const IntField& f, const std::string& text, const Site& site) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::invalid_argument || end != text.data() + text.size())
    site.fail("expected an integer, got '{}'", text);
  if (error == std::errc::result_out_of_range || value < f.min || value > f.max)
    site.fail("{} is out of range (allowed: {})", text, allowed(f));
  return value;
}

double parse(const FloatField& f, const std::string& text, const Site& site) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    site.fail("expected a finite number, got '{}'", text);
  bool below = f.min_open ? value <= f.min : value < f.min;
  bool above = f.max_open ? value >= f.max : value > f.max;
  if (below || above) site.fail("{} is out of range (allowed: {})", text, allowed(f));
  return value;
}

std::string parse(const StringField& f, const std::string& text, const Site& site) {
  for (const auto& [old_name, choice] : f.aliases)
    if (text == old_name) {
      fmt::print(stderr, "trident: warning: {}: {}: '{}' is an old name, read as '{}'; write '{}'\n", site.where,
                 site.path, old_name, choice, choice);
      return std::string(choice);
    }
  if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), text) == f.choices.end())
    site.fail("'{}' is not allowed (allowed: {})", text, fmt::join(f.choices, ", "));
  if (f.required && text.empty()) site.fail("expected {}, got ''", expected(f));
  if (!f.text)  // a path or a name: a NUL would cut it short where the system reads it, elsewhere than written
    for (std::size_t i = 0; i < text.size(); ++i)
      if (const auto c = static_cast<unsigned char>(text[i]); c < 0x20 || c == 0x7f)
        site.fail("holds a control character (byte 0x{:02x} at offset {}); paths and names may not", c, i);
  return text;
}

bool parse(const BoolField&, const std::string& text, const Site& site) {
  if (text == "true") return true;
  if (text == "false") return false;
  site.fail("expected true or false, got '{}'", text);
}

// The scalar text of `value`. Only an optional string (no choices, not required) accepts no value, as "".
template <class Field>
std::string scalar_text(const Field& field, const YAML::Node& value, const Site& site) {
  if (value.IsScalar()) return value.Scalar();
  if constexpr (std::is_same_v<Field, StringField>) {
    if (value.IsNull() && field.choices.empty() && !field.required) return "";
  }
  site.fail("expected {}, got {}", expected(field), kind(value));
}

std::string format_value(int64_t value) { return fmt::format("{}", value); }
std::string format_value(bool value) { return value ? "true" : "false"; }
std::string format_value(double value) {
  // The shortest text that reads back to the same double, with a '.' so YAML 1.1 readers (PyYAML) see a float.
  std::string text = fmt::format("{}", value);
  if (text.find('.') == std::string::npos) text.insert(std::min(text.find('e'), text.size()), ".0");
  return text;
}
std::string format_value(const std::string& value) {
  YAML::Emitter emitter;  // quotes only what YAML would otherwise misread ("", "null", "a: b", ...)
  emitter << value;
  return emitter.c_str();
}

std::string value_text(const Key& key, const Config& config) {
  return std::visit([&](const auto& field) { return format_value(field.member.cref(config)); }, key.field);
}

// ---- loading -------------------------------------------------------------------------------------------

// Builds a Config from one YAML text and then overrides, remembering where each key was set for messages.
class Loader final : public KeyRelations {
 public:
  explicit Loader(std::string source) : source_(std::move(source)) {}

  void read(const std::string& yaml_text) {
    YAML::Node root;
    try {
      root = YAML::Load(yaml_text);
    } catch (const YAML::Exception& e) {
      throw_config_error("{}: YAML syntax error: {}", at(e.mark), e.msg);
    }
    if (root.IsNull()) return;  // an empty file: every key keeps its default
    if (!root.IsMap())
      throw_config_error("{}: the top level must be a mapping of sections ({}), got {}", at(root.Mark()),
                         fmt::join(children(""), ", "), kind(root));
    read_mapping(root, "");
  }

  // "key.path=value": the value is read as a YAML scalar under the same rules as in the file.
  void apply(const std::string& override_text) {
    std::string where = "--set " + override_text;
    size_t eq = override_text.find('=');
    if (eq == std::string::npos) throw_config_error("{}: expected key.path=value", where);
    std::string path = override_text.substr(0, eq);
    if (path.empty()) throw_config_error("{}: empty key; expected key.path=value", where);
    const Key* key = find_key(path);
    if (!key) throw_config_error("{}: {}", where, unknown_key(path));
    YAML::Node value;
    try {
      value = YAML::Load(override_text.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw_config_error("{}: {}: YAML syntax error in the value: {}", where, path, e.msg);
    }
    assign(*key, value, where);
  }

  // Checks the relations between keys, now that every value is known.
  Config finish() const {
    const Config& c = config_;
    require(c.model.n_embd % c.model.n_head == 0, "model.n_head", "must divide", "model.n_embd");
    check_layer_pattern(c.model);
    require(c.train.min_lr <= c.train.lr, "train.min_lr", "must be <=", "train.lr");
    require(c.train.warmup_steps <= c.train.steps, "train.warmup_steps", "must be <=", "train.steps");
    require(c.train.micro_batches <= c.train.batch_tokens, "train.micro_batches", "must be <=",
            "train.batch_tokens");
    require(c.data.kind == "synthetic" || !c.data.path.empty(), "data.path", "must be non-empty when",
            "data.kind");
    if (c.data.eot_token != -1 && c.data.kind != "tokens")  // other kinds cut documents their own way
      throw_config_error("{} separates documents in flat token files only (data.kind: tokens); {} cuts its documents "
                         "{}: leave data.eot_token at -1",
                         describe("data.eot_token"), describe("data.kind"),
                         c.data.kind == "text" ? "at data.separator (its tokens are bytes, 0 to 255)"
                                               : "as its own format says");
    check_config_sections(c, *this);
    return c;
  }

 private:
  // Reads one mapping; `prefix` is its dotted path ("" for the top level, "model" for a section).
  void read_mapping(const YAML::Node& map, const std::string& prefix) {
    std::map<std::string, std::string> seen;  // name -> where it first appeared
    for (const auto& entry : map) {
      const YAML::Node& name = entry.first;
      const YAML::Node& value = entry.second;
      std::string path = prefix.empty() ? name.Scalar() : prefix + "." + name.Scalar();
      std::string where = at(name.Mark());
      if (auto [first, inserted] = seen.emplace(name.Scalar(), where); !inserted)
        throw_config_error("{}: duplicate key '{}' (first given at {})", where, path, first->second);
      if (name.Scalar().find('.') != std::string::npos)  // one spelling per key, so duplicates are caught
        throw_config_error("{}: '{}' contains '.'; write nested mappings instead (dotted paths are for --set)",
                           where, name.Scalar());

      if (const Key* key = find_key(path)) {
        // yaml-cpp places a missing value at the next token; point at its key instead.
        assign(*key, value, value.IsNull() ? where : at(value.Mark()));
      } else if (!is_section(path)) {
        throw_config_error("{}: {}", where, unknown_key(path));
      } else if (value.IsMap()) {
        read_mapping(value, path);
      } else if (!value.IsNull()) {  // an empty section keeps its defaults
        throw_config_error("{}: '{}' is a section and expects a mapping of its keys ({}), got {}",
                           at(value.Mark()), path, fmt::join(children(path), ", "), kind(value));
      }
    }
  }

  void assign(const Key& key, const YAML::Node& value, std::string where) {
    Site site{std::move(where), key.path};
    std::visit(
        [&](const auto& field) {
          field.member.ref(config_) = parse(field, scalar_text(field, value, site), site);
        },
        key.field);
    origins_[std::string(key.path)] = site.where;
  }

  // "x.yaml:5:12" (yaml-cpp counts from 0), or just the source when the position is unknown.
  std::string at(const YAML::Mark& mark) const {
    if (mark.is_null()) return source_;
    return fmt::format("{}:{}:{}", source_, mark.line + 1, mark.column + 1);
  }

  // "train.min_lr = 0.01 (x.yaml:5:11) must be <= train.lr = 0.001 (default)"
  void require(bool ok, std::string_view a, std::string_view relation, std::string_view b) const override {
    if (!ok) throw_config_error("{} {} {}", describe(a), relation, describe(b));
  }

  // model.layers: L and S only, a length dividing n_layer, both kinds; given exactly when model.attention is hybrid.
  void check_layer_pattern(const ModelConfig& m) const {
    const std::string& p = m.layers;
    if (m.attention != "hybrid") {
      if (!p.empty())
        throw_config_error("{}: a layer pattern is for model.attention: hybrid, but {}", describe("model.layers"),
                           describe("model.attention"));
      return;
    }
    if (p.empty())
      throw_config_error("{}: model.attention: hybrid needs a pattern of L (linear) and S (softmax) layers, e.g. "
                         "model.layers: LLLS",
                         describe("model.layers"));
    if (p.find_first_not_of("LS") != std::string::npos)
      throw_config_error("{}: the pattern has only L (linear) and S (softmax) layers, not '{}'",
                         describe("model.layers"), p[p.find_first_not_of("LS")]);
    if (m.n_layer % static_cast<int64_t>(p.size()) != 0)
      throw_config_error("{}: the pattern is repeated to model.n_layer, so its length {} must divide {}",
                         describe("model.layers"), p.size(), describe("model.n_layer"));
    if (p.find('L') == std::string::npos || p.find('S') == std::string::npos)
      throw_config_error("{}: a hybrid has both kinds of layer (for one kind, set model.attention: {})",
                         describe("model.layers"), p.find('L') == std::string::npos ? "softmax" : "linear");
  }

  std::string describe(std::string_view path) const {
    auto origin = origins_.find(path);
    return fmt::format("{} = {} ({})", path, value_text(*find_key(path), config_),
                       origin == origins_.end() ? "default" : origin->second);
  }

  std::string source_;
  Config config_;
  std::map<std::string, std::string, std::less<>> origins_;  // key path -> where its value was set
};

std::string read_config_file(const fs::path& path) { return read_text_file(path, "config file"); }

}  // namespace

bool ModelConfig::linear_layer(int64_t l) const {
  if (attention != "hybrid") return attention == "linear";
  TRIDENT_CHECK(!layers.empty(), "model.attention: hybrid without a model.layers pattern");
  return layers[static_cast<std::size_t>(l) % layers.size()] == 'L';
}

int64_t ModelConfig::linear_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < n_layer; ++l) n += linear_layer(l) ? 1 : 0;
  return n;
}

bool ModelConfig::any_linear() const {
  return attention == "linear" || (attention == "hybrid" && layers.find('L') != std::string::npos);
}

bool ModelConfig::any_softmax() const {
  return attention == "softmax" || (attention == "hybrid" && layers.find('S') != std::string::npos);
}

Config parse_config(const std::string& yaml_text, const std::string& source,
                    const std::vector<std::string>& overrides) {
  Loader loader(source);
  loader.read(yaml_text);
  for (const std::string& override_text : overrides) loader.apply(override_text);
  return loader.finish();
}

Config load_config(const fs::path& path, const std::vector<std::string>& overrides) {
  return parse_config(read_config_file(path), path.string(), overrides);
}

std::string to_yaml(const Config& config) {
  std::string out = "# Trident config, resolved: every key with its value (configs/README.md documents them).\n";
  std::vector<std::string_view> open;  // the sections enclosing the previous key
  for (const Key& key : schema()) {
    std::vector<std::string_view> sections = split_path(key.path);
    std::string_view name = sections.back();
    sections.pop_back();
    auto same = std::mismatch(open.begin(), open.end(), sections.begin(), sections.end()).second;
    for (auto section = same; section != sections.end(); ++section) {
      size_t depth = static_cast<size_t>(section - sections.begin());
      if (depth == 0) out += "\n";  // a blank line between top-level sections
      out += fmt::format("{:{}}{}:\n", "", 2 * depth, *section);
    }
    open = sections;
    std::string line = fmt::format("{:{}}{}: {}", "", 2 * sections.size(), name, value_text(key, config));
    out += fmt::format("{:<30}  # {}\n", line, key.doc);
  }
  return out;
}

void write_resolved_config(const Config& config, const fs::path& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw_runtime_error("cannot create directory '{}': {}", dir.string(), error.message());
  write_file_atomically(dir / "config.resolved.yaml", to_yaml(config));
}

}  // namespace trident
