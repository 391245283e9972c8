#include "app/bench/comm_profile.h"

#include <algorithm>
#include <string>

#include <fmt/core.h>
#include <yaml-cpp/yaml.h>

#include "core/common/atomic_file.h"
#include "core/common/error.h"

namespace trident::bench {

namespace {

YAML::Node load_profile(const std::filesystem::path& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path.string());
  } catch (const YAML::ParserException& e) {
    throw_config_error("--profile {}: YAML syntax error at line {}, column {}: {}", path.string(), e.mark.line + 1,
                       e.mark.column + 1, e.msg);
  } catch (const YAML::Exception& e) {
    throw_runtime_error("--profile {}: cannot read it: {}", path.string(), e.msg);
  }
  if (!root.IsNull() && !root.IsMap())
    throw_config_error("--profile {}: not a cluster profile (the top level must be a mapping of sections)",
                       path.string());
  return root;
}

// 4 significant digits, always with a '.' so YAML 1.1 readers (PyYAML) see a float too: 150.0, 1.25e-05 -> 1.25e-05,
// 2e-06 -> 2.0e-06.
YAML::Node number(double v) {
  std::string text = fmt::format("{:.4g}", v);
  if (text.find('.') == std::string::npos) text.insert(std::min(text.find('e'), text.size()), ".0");
  return YAML::Node(text);
}

YAML::Node link(const LinkMeasure& m) {
  YAML::Node node(YAML::NodeType::Map);
  node["bandwidth_gb_per_s"] = number(m.bandwidth_gb_per_s);
  node["latency_us"] = number(m.latency_us);
  node.SetStyle(YAML::EmitterStyle::Flow);
  return node;
}

}  // namespace

void check_profile_file(const std::filesystem::path& path) {
  if (std::filesystem::exists(path)) load_profile(path);
}

void write_network_profile(const std::filesystem::path& path, const NetworkMeasure& network, const ClusterShape& shape) {
  YAML::Node root = std::filesystem::exists(path) ? load_profile(path) : YAML::Node();
  if (root.IsNull()) {
    root = YAML::Node(YAML::NodeType::Map);
    root["cluster"]["name"] = shape.name;
    root["cluster"]["nodes"] = shape.nodes;
    root["cluster"]["devices_per_node"] = shape.devices_per_node;
    root["cluster"]["device_memory_gb"] = number(shape.device_memory_gb);
  }
  YAML::Node section(YAML::NodeType::Map);
  section["intra_node"] = link(network.intra_node);
  section["inter_node"] = link(network.inter_node);
  if (!network.alltoall.empty()) {
    for (const AlltoallMeasure& a : network.alltoall) {
      YAML::Node entry(YAML::NodeType::Map);
      entry["group_size"] = a.group_size;
      entry["nodes"] = a.nodes;
      entry["bandwidth_gb_per_s"] = number(a.link.bandwidth_gb_per_s);
      entry["latency_us"] = number(a.link.latency_us);
      entry.SetStyle(YAML::EmitterStyle::Flow);
      section["alltoall"].push_back(entry);
    }
  }
  root["network"] = section;
  YAML::Emitter out;
  out << root;
  write_file_atomically(path, std::string(out.c_str()) + "\n");
}

}  // namespace trident::bench
