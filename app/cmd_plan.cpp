// trident plan CONFIG [--cluster FILE] [--json]. A strategy family with a plan of its own prints it (FlexSP's groups
// per batch, ATOM's swap plan: the entry's print_plan slot); otherwise the selector's candidates per batch
// (app/plan/select_plan.h). Times are the cost model's estimates, not measurements.
#include <memory>

#include "app/commands.h"
#include "app/plan/batches.h"
#include "app/plan/replay.h"
#include "app/plan/select_plan.h"
#include "kernels/common/error.h"
#include "parallel/select/registry.h"

namespace trident::app {

namespace {

struct PlanArgs {
  std::string cluster;
  std::string replay;
  std::string refit;
  bool json = false;
  plan::BatchSource source;
};

}  // namespace

void add_batch_source_args(CLI::App* cmd, plan::BatchSource& source) {
  cmd->add_option("--lengths", source.lengths_file,
                  "Plan sequence lengths from this file (whitespace-separated) instead of the configured data");
  cmd->add_option("--batch-sequences", source.batch_sequences,
                  "Sequences per batch: N documents of the data (or N lengths of --lengths) instead of the "
                  "trainer's token-packed batches")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batches", source.batches, "Batches to plan (default 1)")->check(CLI::PositiveNumber);
}

void add_plan_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "plan", "Plans for a described cluster, per batch: with parallel.strategy: flexsp, FlexSP's groups, "
              "micro-batches and estimated times beside static SP and the best single degree per batch; with auto, "
              "dp or sp, every candidate strategy's estimate and the one the selector would run; with atom, the "
              "swap plan: the layers' split into sub-models, the predicted step and the copy time left exposed");
  auto config = add_config_args(cmd, /*optional=*/true);
  auto args = std::make_shared<PlanArgs>();
  cmd->add_option("--cluster", args->cluster,
                  "Cluster profile file (default: parallel.flexsp.cluster, or parallel.select.profile)");
  cmd->add_flag("--json", args->json, "One JSON object per batch instead of text");
  add_batch_source_args(cmd, args->source);
  cmd->add_option("--replay", args->replay,
                  "Instead of planning: the FlexSP cost model's error per group degree in a training run's metrics");
  cmd->add_option("--refit", args->refit,
                  "With --replay: scale this profile file's compute coefficients by the run's measured / estimated");
  cmd->callback([config, args] {
    if (!args->refit.empty() && args->replay.empty()) throw_config_error("--refit FILE needs --replay RUN_DIR");
    if (!args->replay.empty()) return plan::print_replay(args->replay, args->json, args->refit);
    if (config->path.empty()) throw_config_error("trident plan needs CONFIG (or --replay RUN_DIR)");
    const Config c = config->load();
    const std::string& profile = args->cluster;
    const StrategyEntry* family = chosen_family(c);
    if (family && family->print_plan)
      return family->print_plan(c, {.profile = profile, .json = args->json,
                                    .batches = [&] { return plan::draw_batches(c, args->source); },
                                    .family = family_named});
    if (family && !family->plan)
      throw_config_error("parallel.strategy: {}: trident plan has no plan for this strategy (no estimate of its own)",
                         c.parallel.strategy);
    plan::print_selection_plan(c, profile.empty() ? c.parallel.select_profile : profile, args->source, args->json);
  });
}

}  // namespace trident::app
