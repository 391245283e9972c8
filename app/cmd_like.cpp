// trident like TESTBED PROFILE: the emulated cluster's link rates that give this machine the testbed's ratio of
// communication to compute (parallel/cost/testbed_scale.h), with both sides' figures side by side.
#include <map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "core/metrics/bench_report.h"
#include "kernels/common/error.h"
#include "parallel/cost/testbed_scale.h"

namespace trident::app {

namespace {

struct LikeArgs {
  std::string testbed, here;
  double slowdown = 1;
  int64_t ranks_per_node = 1;
  cost::Exchange exchange = cost::Exchange::sequence;
  int64_t stages = 0;
  int64_t alltoall_group = 0;
  bool scale_lengths = false;
  bool json = false;
};

bench::Row side_row(const char* name, const cost::ScaledSide& side, cost::Exchange exchange) {
  bench::Row row{{{"side", name}, {"model", side.model},
                  {"longest", side.max_seq_len > 0 ? fmt::format("{}", side.max_seq_len) : "not stated"}},
                 {{"s/token", side.seconds_per_token}, {"bytes/token", side.bytes_per_token},
                  {"intra MB/s", side.intra_bytes_per_s / 1e6}, {"inter MB/s", side.inter_bytes_per_s / 1e6},
                  {"intra ratio", side.intra_ratio}, {"inter ratio", side.inter_ratio}}};
  if (exchange == cost::Exchange::pipeline) {
    row.text.emplace_back("stages", fmt::format("{}", side.stages));
    row.text.emplace_back("parameters", side.parameters > 0 ? fmt::format("{}", side.parameters) : "not stated");
    row.numbers.emplace_back("round tokens", side.round_tokens);
  }
  return row;
}

void print_like(const LikeArgs& args) {
  const cost::ScaledLinks links = cost::scale_links_to_testbed(
      cost::read_profile(args.testbed), cost::read_profile(args.here), args.slowdown, args.exchange, args.stages,
      args.alltoall_group, args.scale_lengths);
  const bool pipeline = args.exchange == cost::Exchange::pipeline;
  const double node_link = links.here.inter_bytes_per_s * static_cast<double>(args.ranks_per_node);
  if (args.json) {
    auto side = [pipeline](const cost::ScaledSide& s) {
      nlohmann::ordered_json j{{"profile", s.source}, {"model", s.model}, {"max_seq_len", s.max_seq_len},
                               {"seconds_per_token", s.seconds_per_token}, {"bytes_per_token", s.bytes_per_token},
                               {"intra_bytes_per_s", s.intra_bytes_per_s}, {"inter_bytes_per_s", s.inter_bytes_per_s},
                               {"intra_ratio", s.intra_ratio}, {"inter_ratio", s.inter_ratio}};
      if (pipeline) {
        j["stages"] = s.stages;
        j["parameters"] = s.parameters;
        j["round_tokens"] = s.round_tokens;
      }
      return j;
    };
    const nlohmann::ordered_json out{{"testbed", side(links.testbed)}, {"here", side(links.here)},
                                     {"exchange", pipeline ? "pipeline" : "sequence"},
                                     {"alltoall_group", args.alltoall_group},
                                     {"length_scale", links.length_scale},
                                     {"slowdown", args.slowdown}, {"ranks_per_node", args.ranks_per_node},
                                     {"intra_bw", cost::tc_rate(links.here.intra_bytes_per_s)},
                                     {"inter_bw", cost::tc_rate(node_link)}};
    fmt::print("{}\n", out.dump());
    return;
  }
  const std::string inter =
      args.alltoall_group > 0
          ? fmt::format("; the testbed's inter link is its all-to-all over {} devices (network.alltoall)",
                        args.alltoall_group)
          : "";
  const std::string lengths =
      args.scale_lengths
          ? fmt::format("; lengths scale by {:.4g} (alpha2 / alpha1 here over the testbed's): here is taken at the "
                        "testbed's longest sequence times that, and the ratios match at every length",
                        links.length_scale)
          : "";
  const std::string what =
      pipeline ? "a pipeline's stage boundary: seconds moving a token's activations one way per second a stage "
                 "computes it (ratio); round tokens: tokens one device computes while a peer's parameters cross the "
                 "inter link once"
               : "seconds moving a token's activations per second computing it (ratio), per device";
  bench::Report report(fmt::format("Scaled to {} ({}), {}, at each side's longest sequence; here: s/token measured in "
                                   "{}, times {:.3g} for the ranks sharing its cores{}{}",
                                   links.testbed.model, links.testbed.source, what, args.here, args.slowdown, inter,
                                   lengths),
                       false);
  report.add(side_row("testbed", links.testbed, args.exchange));
  report.add(side_row("here", links.here, args.exchange));
  report.print();
  fmt::print("\nemucluster: --intra-bw {} --inter-bw {} (a node's link: {} ranks x {})\n",
             cost::tc_rate(links.here.intra_bytes_per_s), cost::tc_rate(node_link), args.ranks_per_node,
             cost::tc_rate(links.here.inter_bytes_per_s));
}

}  // namespace

void add_like_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "like", "The emulated cluster's link rates that give this machine a testbed's ratio of communication to compute");
  auto args = std::make_shared<LikeArgs>();
  cmd->add_option("TESTBED", args->testbed, "The testbed's cluster file (configs/clusters/)")->required();
  cmd->add_option("PROFILE", args->here, "This machine's profile of the benchmark's model (trident bench profile)")
      ->required();
  cmd->add_option("--slowdown", args->slowdown,
                  "How much slower each rank computes than the profile measured, when ranks share cores (>= 1)")
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--ranks-per-node", args->ranks_per_node,
                  "Ranks behind one node link: --inter-bw is that many ranks' share (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--exchange", args->exchange,
                  "What the benchmark's ranks send: sequence (sequence parallelism's all-to-alls; default) or "
                  "pipeline (a pipeline's stage boundaries, one stage a device; needs --stages)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, cost::Exchange>{{"sequence", cost::Exchange::sequence},
                                                {"pipeline", cost::Exchange::pipeline}},
          CLI::ignore_case));
  cmd->add_option("--stages", args->stages, "With --exchange pipeline: the benchmark's stages here (its ranks, >= 2)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  cmd->add_option("--alltoall-group", args->alltoall_group,
                  "Scale the inter link from the testbed's all-to-all over this many devices (its network.alltoall "
                  "row) instead of its inter_node link: all ranks here stand for that group (sequence exchange)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  cmd->add_flag("--scale-lengths", args->scale_lengths,
                "Scale sequence lengths by alpha2 / alpha1 here over the testbed's, and match the ratios at the "
                "testbed's longest sequence times that: then they match at every length (sequence exchange)");
  cmd->add_flag("--json", args->json, "One JSON object instead of the table");
  cmd->callback([args] { print_like(*args); });
}

}  // namespace trident::app
