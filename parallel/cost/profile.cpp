// Reading, validating and writing cluster profile files (profile.h).
#include "parallel/cost/profile.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "core/common/atomic_file.h"
#include "core/common/text_file.h"
#include "kernels/common/error.h"

namespace trident::cost {
namespace fs = std::filesystem;
namespace {

const std::vector<std::string> kSections = {"cluster", "network", "compute", "layers", "memory", "model"};
const std::vector<std::string> kFitKeys = {"alpha1_s_per_token2", "alpha2_s_per_token", "beta1_s"};

// Reads the keys of one mapping, checking each against the allowed list; `path` is its dotted name.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path, const std::string& source, std::vector<std::string> keys)
      : node_(node), path_(std::move(path)), source_(source), keys_(std::move(keys)) {
    if (!node_.IsMap()) fail(node_, "expected a mapping of {}, got {}", fmt::join(keys_, ", "), kind(node_));
    for (const auto& entry : node_) {
      const std::string name = entry.first.Scalar();
      if (std::find(keys_.begin(), keys_.end(), name) == keys_.end())
        fail_at(entry.first, key_path(name), "unknown {} ({} {}: {})", path_.empty() ? "section" : "key",
                path_.empty() ? "sections" : "keys in", path_.empty() ? "of a profile" : "'" + path_ + "'",
                fmt::join(keys_, ", "));
    }
  }

  bool has(const std::string& key) const { return node_[key].IsDefined() && !node_[key].IsNull(); }

  YAML::Node child(const std::string& key) const {
    if (!has(key)) fail(node_, "missing key '{}'", key);
    return node_[key];
  }

  double number(const std::string& key, double min, bool min_open) const {
    const YAML::Node value = child(key);
    const std::string text = scalar(value, key, "a number");
    double x = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(x))
      fail_at(value, key_path(key), "expected a finite number, got '{}'", text);
    if (min_open ? x <= min : x < min)
      fail_at(value, key_path(key), "{} is out of range (allowed: {} {})", text, min_open ? ">" : ">=", min);
    return x;
  }

  int64_t integer(const std::string& key, int64_t min) const {
    const YAML::Node value = child(key);
    const std::string text = scalar(value, key, "an integer");
    int64_t x = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (error != std::errc() || end != text.data() + text.size())
      fail_at(value, key_path(key), "expected an integer, got '{}'", text);
    if (x < min) fail_at(value, key_path(key), "{} is out of range (allowed: >= {})", text, min);
    return x;
  }

  std::string text(const std::string& key) const { return has(key) ? scalar(node_[key], key, "a string") : ""; }

  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const std::string& path() const { return path_; }

  template <class... Args>
  [[noreturn]] void fail(const YAML::Node& at, fmt::format_string<Args...> f, Args&&... args) const {
    fail_at(at, path_.empty() ? "profile" : path_, f, std::forward<Args>(args)...);
  }

  template <class... Args>
  [[noreturn]] void fail_at(const YAML::Node& at, const std::string& key, fmt::format_string<Args...> f,
                            Args&&... args) const {
    throw_config_error("{}: {}: {}", where(source_, at.Mark()), key, fmt::format(f, std::forward<Args>(args)...));
  }

  static std::string where(const std::string& source, const YAML::Mark& mark) {
    if (mark.is_null()) return source;
    return fmt::format("{}:{}:{}", source, mark.line + 1, mark.column + 1);
  }

  static std::string kind(const YAML::Node& node) {
    if (node.IsMap()) return "a mapping";
    if (node.IsSequence()) return "a sequence";
    if (node.IsNull()) return "no value";
    return fmt::format("'{}'", node.Scalar());
  }

 private:
  std::string scalar(const YAML::Node& value, const std::string& key, const char* expected) const {
    if (!value.IsScalar()) fail_at(value, key_path(key), "expected {}, got {}", expected, kind(value));
    return value.Scalar();
  }

  YAML::Node node_;
  std::string path_;
  const std::string& source_;
  std::vector<std::string> keys_;
};

Link read_link(const MapReader& parent, const std::string& key, const std::string& source) {
  MapReader r(parent.child(key), parent.key_path(key), source, {"bandwidth_gb_per_s", "latency_us"});
  return {r.number("bandwidth_gb_per_s", 0, true), r.number("latency_us", 0, false)};
}

ClusterSection read_cluster(const MapReader& r) {
  return {r.text("name"), r.integer("nodes", 1), r.integer("devices_per_node", 1),
          r.number("device_memory_gb", 0, false)};
}

NetworkSection read_network(const MapReader& r, const std::string& source) {
  NetworkSection n{read_link(r, "intra_node", source), read_link(r, "inter_node", source), {}, {}, {}};
  if (r.has("host_to_device")) n.host_to_device = read_link(r, "host_to_device", source);
  if (r.has("device_to_host")) n.device_to_host = read_link(r, "device_to_host", source);
  if (!r.has("alltoall")) return n;
  const YAML::Node list = r.child("alltoall");
  if (!list.IsSequence())
    r.fail_at(list, r.key_path("alltoall"), "expected a list of {{group_size, nodes, bandwidth_gb_per_s, "
              "latency_us}}, got {}", MapReader::kind(list));
  std::set<std::pair<int64_t, int64_t>> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    MapReader e(list[i], fmt::format("network.alltoall[{}]", i), source,
                {"group_size", "nodes", "bandwidth_gb_per_s", "latency_us"});
    AlltoallLink a{e.integer("group_size", 1), e.integer("nodes", 1),
                   {e.number("bandwidth_gb_per_s", 0, true), e.number("latency_us", 0, false)}};
    if (!seen.insert({a.group_size, a.nodes}).second)
      e.fail(list[i], "a second entry for group_size {} on {} node(s)", a.group_size, a.nodes);
    n.alltoall.push_back(a);
  }
  return n;
}

ComputeSection read_compute(const MapReader& r) {
  return {r.number("alpha1_s_per_token2", 0, false), r.number("alpha2_s_per_token", 0, false),
          r.number("beta1_s", 0, false), r.text("fitted_from")};
}

LayersSection read_layers(const MapReader& r, const std::string& source) {
  auto fit = [&](const std::string& key) {
    return read_compute(MapReader(r.child(key), r.key_path(key), source, kFitKeys));
  };
  return {fit("block_forward"), fit("block_backward"), fit("outside")};
}

MemorySection read_memory(const MapReader& r) {
  return {r.has("model_states_gb") ? std::optional(r.number("model_states_gb", 0, false)) : std::nullopt,
          r.number("bytes_per_token", 0, true),
          r.has("reserved_gb") ? r.number("reserved_gb", 0, false) : 0.0};
}

ModelSection read_model(const MapReader& r) {
  return {r.text("name"), r.integer("n_layer", 1), r.integer("n_embd", 1),
          r.has("bytes_per_value") ? r.integer("bytes_per_value", 1) : 2,
          r.has("max_seq_len") ? r.integer("max_seq_len", 1) : 0,
          r.has("parameters") ? r.integer("parameters", 1) : 0};
}

YAML::Node load_yaml(const std::string& yaml_text, const std::string& source) {
  try {
    return YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw_config_error("{}: YAML syntax error: {}", MapReader::where(source, e.mark), e.msg);
  }
}

std::string read_text(const fs::path& path) { return read_text_file(path, "profile file"); }

// ---- writing ---------------------------------------------------------------------------------------------

// Numbers as the shortest text that reads back to the same double.
std::string number_text(double x) { return fmt::format("{}", x); }

YAML::Node fit_node(const ComputeSection& c) {
  YAML::Node n;
  n["alpha1_s_per_token2"] = number_text(c.alpha1_s_per_token2);
  n["alpha2_s_per_token"] = number_text(c.alpha2_s_per_token);
  n["beta1_s"] = number_text(c.beta1_s);
  return n;
}

YAML::Node link_node(const Link& l) {
  YAML::Node n;
  n["bandwidth_gb_per_s"] = number_text(l.bandwidth_gb_per_s);
  n["latency_us"] = number_text(l.latency_us);
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

std::vector<std::pair<std::string, YAML::Node>> section_nodes(const Profile& p) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  if (p.cluster) {
    YAML::Node n;
    n["name"] = p.cluster->name;
    n["nodes"] = p.cluster->nodes;
    n["devices_per_node"] = p.cluster->devices_per_node;
    n["device_memory_gb"] = number_text(p.cluster->device_memory_gb);
    out.emplace_back("cluster", n);
  }
  if (p.network) {
    YAML::Node n;
    n["intra_node"] = link_node(p.network->intra_node);
    n["inter_node"] = link_node(p.network->inter_node);
    for (const AlltoallLink& a : p.network->alltoall) {
      YAML::Node e;
      e["group_size"] = a.group_size;
      e["nodes"] = a.nodes;
      e["bandwidth_gb_per_s"] = number_text(a.link.bandwidth_gb_per_s);
      e["latency_us"] = number_text(a.link.latency_us);
      e.SetStyle(YAML::EmitterStyle::Flow);
      n["alltoall"].push_back(e);
    }
    if (p.network->host_to_device) n["host_to_device"] = link_node(*p.network->host_to_device);
    if (p.network->device_to_host) n["device_to_host"] = link_node(*p.network->device_to_host);
    out.emplace_back("network", n);
  }
  if (p.compute) {
    YAML::Node n = fit_node(*p.compute);
    if (!p.compute->fitted_from.empty()) n["fitted_from"] = p.compute->fitted_from;
    out.emplace_back("compute", n);
  }
  if (p.layers) {
    YAML::Node n;
    for (auto [key, fit] : {std::pair{"block_forward", &p.layers->block_forward},
                            std::pair{"block_backward", &p.layers->block_backward},
                            std::pair{"outside", &p.layers->outside}}) {
      n[key] = fit_node(*fit);
      n[key].SetStyle(YAML::EmitterStyle::Flow);
    }
    out.emplace_back("layers", n);
  }
  if (p.memory) {
    YAML::Node n;
    if (p.memory->model_states_gb) n["model_states_gb"] = number_text(*p.memory->model_states_gb);
    n["bytes_per_token"] = number_text(p.memory->bytes_per_token);
    n["reserved_gb"] = number_text(p.memory->reserved_gb);
    out.emplace_back("memory", n);
  }
  if (p.model) {
    YAML::Node n;
    n["name"] = p.model->name;
    n["n_layer"] = p.model->n_layer;
    n["n_embd"] = p.model->n_embd;
    n["bytes_per_value"] = p.model->bytes_per_value;
    if (p.model->max_seq_len > 0) n["max_seq_len"] = p.model->max_seq_len;
    if (p.model->parameters > 0) n["parameters"] = p.model->parameters;
    out.emplace_back("model", n);
  }
  return out;
}

std::string emit(const YAML::Node& root) {
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

Profile parse_profile(const std::string& yaml_text, const std::string& source) {
  const YAML::Node root = load_yaml(yaml_text, source);
  Profile p;
  p.source = source;
  if (root.IsNull()) return p;
  MapReader top(root, "", source, kSections);
  if (top.has("cluster")) p.cluster = read_cluster(MapReader(root["cluster"], "cluster", source,
                                                           {"name", "nodes", "devices_per_node", "device_memory_gb"}));
  if (top.has("network"))
    p.network = read_network(MapReader(root["network"], "network", source,
                                       {"intra_node", "inter_node", "alltoall", "host_to_device", "device_to_host"}),
                             source);
  if (top.has("compute"))
    p.compute = read_compute(MapReader(root["compute"], "compute", source,
                                       {"alpha1_s_per_token2", "alpha2_s_per_token", "beta1_s", "fitted_from"}));
  if (top.has("layers"))
    p.layers = read_layers(MapReader(root["layers"], "layers", source, {"block_forward", "block_backward", "outside"}),
                           source);
  if (top.has("memory"))
    p.memory = read_memory(
        MapReader(root["memory"], "memory", source, {"model_states_gb", "bytes_per_token", "reserved_gb"}));
  if (top.has("model"))
    p.model = read_model(MapReader(root["model"], "model", source,
                                   {"name", "n_layer", "n_embd", "bytes_per_value", "max_seq_len", "parameters"}));
  return p;
}

Profile read_profile(const fs::path& path) { return parse_profile(read_text(path), path.string()); }

std::string profile_yaml(const Profile& profile) {
  YAML::Node root(YAML::NodeType::Map);
  for (auto& [name, node] : section_nodes(profile)) root[name] = node;
  return emit(root);
}

void check_profile_target(const fs::path& path) {
  if (fs::exists(path)) read_profile(path);
}

void merge_profile_into(const fs::path& path, const Profile& update) {
  YAML::Node root(YAML::NodeType::Map);
  if (fs::exists(path)) {
    const std::string text = read_text(path);
    parse_profile(text, path.string());  // refuse to rewrite a file we would not read back
    const YAML::Node existing = load_yaml(text, path.string());
    if (!existing.IsNull()) root = existing;
  }
  for (auto& [name, node] : section_nodes(update)) root[name] = node;
  write_file_atomically(path, "# Trident cluster profile (parallel/cost/README.md documents the format)\n" + emit(root));
}

}  // namespace trident::cost
