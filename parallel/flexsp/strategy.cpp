#include "parallel/flexsp/strategy.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <string_view>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "core/model/recompute.h"
#include "parallel/placement/run_shape.h"
#include "core/optim/adamw.h"
#include "kernels/common/error.h"
#include "parallel/flexsp/config.h"
#include "parallel/flexsp/fast_solver.h"
#include "parallel/lasp/config.h"
#include "parallel/lasp/model_op.h"
#include "parallel/sp/model_op.h"

namespace trident {

FlexInner configured_flex_inner(const Config& c) {
  if (flexsp_config(c).inner == "lasp") return FlexInner::lasp;
  if (flexsp_config(c).inner == "ulysses") return FlexInner::ulysses;
  return c.model.any_linear() ? FlexInner::lasp : FlexInner::ulysses;
}

void check_flexsp(const ModelConfig& m, int world, FlexInner inner) {
  if ((world & (world - 1)) != 0)
    throw_config_error("parallel.strategy: 'flexsp' plans power-of-two groups over all ranks, but this run has {} "
                       "ranks (run on a power of two, or use parallel.strategy: auto or sp)",
                       world);
  if (inner == FlexInner::lasp && !m.any_linear())
    throw_config_error("parallel.flexsp.inner: 'lasp' runs LASP inside the groups, which parallelises linear "
                       "attention, but model.attention is '{}' (use parallel.flexsp.inner: ulysses)",
                       m.attention);
  if (inner == FlexInner::ulysses && world > 1 && m.n_head % world != 0)
    throw_config_error("parallel.strategy: 'flexsp' runs Ulysses inside groups of up to all {} ranks, but "
                       "model.n_head = {} does not divide by {}{}",
                       world, m.n_head, world,
                       m.any_linear() ? " (parallel.flexsp.inner: lasp has no such limit)" : "");
}

cost::GroupExchange flex_exchange(const ModelConfig& m, FlexInner inner, LaspVariant variant) {
  if (inner == FlexInner::ulysses) return {};
  const double D = static_cast<double>(m.n_embd / m.n_head);
  return {variant == LaspVariant::lasp1 ? cost::GroupExchange::Kind::lasp_chain
                                       : cost::GroupExchange::Kind::lasp_allgather,
          4.0 * static_cast<double>(m.n_head) * D * D, m.n_layer - m.linear_layers(), m.n_head};
}

cost::GroupCostModel with_flex_exchange(const cost::GroupCostModel& cost, const Config& config, FlexInner inner) {
  if (inner == FlexInner::ulysses) return cost;
  const cost::GroupCostModel chain = cost.with_exchange(flex_exchange(config.model, inner, LaspVariant::lasp1));
  const cost::GroupCostModel gather = cost.with_exchange(flex_exchange(config.model, inner, LaspVariant::lasp2));
  const std::string& variant = lasp_config(config).variant;
  if (variant == "lasp1") return chain;
  if (variant == "lasp2") return gather;
  const int64_t all = cost.max_degree();
  return chain.group_overhead_s(all) < gather.group_overhead_s(all) ? chain : gather;
}

cost::GroupCostModel flexsp_cost_model(const cost::Profile& profile, const Config& config, int64_t capacity,
                                  FlexInner inner) {
  cost::Profile p = profile;
  if (!p.model)
    p.model = cost::ModelSection{config.run.name, config.model.n_layer, config.model.n_embd,
                                 activation_value_bytes(precision_named(config.train.precision))};
  // train.recompute: full runs the forward of all but the last layer again, a third of their forward and backward
  if (config.train.recompute == "full" && p.compute) {
    const double L = static_cast<double>(config.model.n_layer), more = 1 + (L - 1) / (3 * L);
    p.compute->alpha1_s_per_token2 *= more;
    p.compute->alpha2_s_per_token *= more;
  }
  return with_flex_exchange(cost::GroupCostModel::for_run(p, capacity), config, inner);
}

namespace {

// A plan on the wire: [n, lengths..., micro-batches, per micro-batch: groups, per group: degree, first device,
// sequences, the sequences...].
std::vector<int64_t> encode(const flexsp::BatchPlan& plan) {
  std::vector<int64_t> out = {static_cast<int64_t>(plan.lengths.size())};
  out.insert(out.end(), plan.lengths.begin(), plan.lengths.end());
  out.push_back(static_cast<int64_t>(plan.micro_batches.size()));
  for (const flexsp::MicroBatchPlan& mb : plan.micro_batches) {
    out.push_back(static_cast<int64_t>(mb.groups.size()));
    for (const flexsp::GroupPlan& g : mb.groups) {
      out.insert(out.end(), {g.degree, g.first_device, static_cast<int64_t>(g.sequences.size())});
      out.insert(out.end(), g.sequences.begin(), g.sequences.end());
    }
  }
  return out;
}

flexsp::BatchPlan decode(const std::vector<int64_t>& wire) {
  std::size_t at = 0;
  auto next = [&] {
    TRIDENT_CHECK(at < wire.size(), "a FlexSP plan of {} values ends early", wire.size());
    return wire[at++];
  };
  flexsp::BatchPlan plan;
  for (int64_t n = next(); n > 0; --n) plan.lengths.push_back(next());
  for (int64_t m = next(); m > 0; --m) {
    flexsp::MicroBatchPlan mb;
    for (int64_t g = next(); g > 0; --g) {
      flexsp::GroupPlan group;
      group.degree = next();
      group.first_device = next();
      for (int64_t k = next(); k > 0; --k) group.sequences.push_back(next());
      mb.groups.push_back(std::move(group));
    }
    plan.micro_batches.push_back(std::move(mb));
  }
  return plan;
}

// TRIDENT_TEST_FLEXSP_SLOWDOWN: "DEGREE:FACTOR,..." (empty when unset).
std::map<int64_t, double> test_slowdown() {
  constexpr const char* kVariable = "TRIDENT_TEST_FLEXSP_SLOWDOWN";
  const char* value = std::getenv(kVariable);
  std::map<int64_t, double> factors;
  if (value == nullptr) return factors;
  const std::string_view text(value);
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, end - at);
    const std::size_t colon = item.find(':');
    int64_t degree = 0;
    double factor = 0;
    const bool ok = colon != std::string_view::npos &&
                    std::from_chars(item.data(), item.data() + colon, degree).ptr == item.data() + colon &&
                    std::from_chars(item.data() + colon + 1, item.data() + item.size(), factor).ptr ==
                        item.data() + item.size() &&
                    degree >= 1 && factor > 0;
    if (!ok) throw_config_error("{}='{}': '{}' is not DEGREE:FACTOR (a positive factor)", kVariable, text, item);
    factors[degree] = factor;
    at = end + 1;
  }
  return factors;
}

}  // namespace

FlexSequenceParallel::FlexSequenceParallel(const StrategyEnv& env, FlexInner inner, Planner planner)
    : inner_(inner),
      learns_(env.config.parallel.select_mode != "model"),
      test_slowdown_(test_slowdown()),
      capacity_(env.capacity_tokens),
      model_(env.config.model),
      precision_(precision_named(env.config.train.precision)),
      device_(env.backend.device()),
      recompute_(env.config.train.recompute),
      groups_(env.groups),
      dp_(env.groups.world(), env.groups.gradients(), env.shards),
      overlap_reduction_(!(env.backend.device() == Device::cuda && env.config.device.comm == "nccl")) {
  const int world = env.groups.world().size();
  check_flexsp(model_, world, inner_);
  // Stages 2 and 3 reduce (and gather) in each pass as it runs, and on one NCCL stream a group's exchange queued
  // behind a world collective another group's member has not reached yet would wait for ever.
  if (env.shards && !overlap_reduction_)
    throw_config_error("parallel.zero.stage: {} reduce-scatters the gradients{} during FlexSP's passes, which "
                       "device.comm: nccl cannot order against the groups' exchanges; use device.comm: host or "
                       "parallel.zero.stage: 1",
                       env.shards->shards_weights() ? 3 : 2,
                       env.shards->shards_weights() ? " and gathers the weights" : "");
  cost_ = flexsp_cost_model(*env.profile, env.config, capacity_, inner_);
  const LaspVariant variant = cost_.exchange().kind == cost::GroupExchange::Kind::lasp_allgather
                                  ? LaspVariant::lasp2
                                  : LaspVariant::lasp1;  // LASP inside: as the planner costs it
  // Static SP's degree: the one that holds the longest document the config allows (as `trident plan`).
  static_degree_ = cost_.min_degree(std::min(env.config.model.max_seq_len, cost_.token_capacity(cost_.max_degree())));
  if (planner) {
    choose_ = [planner = std::move(planner)](std::span<const int64_t> lengths, const cost::GroupCostModel& cost) {
      flexsp::PlanChoice given;
      given.plan = planner(lengths, cost);
      given.flexsp_s = given.plan.time_s;
      return given;
    };
  } else {
    const int64_t tries = flexsp_config(env.config).micro_batch_tries;
    const bool mixed = flexsp_config(env.config).degrees != "single";
    choose_ = [tries, mixed, static_degree = static_degree_](std::span<const int64_t> lengths,
                                                             const cost::GroupCostModel& cost) {
      const flexsp::FastSolver fast;
      return flexsp::choose_plan(lengths, cost, mixed ? &fast : nullptr, nullptr, tries, static_degree);
    };
  }
  if (cost_.devices() != world)
    throw_config_error("{}: the profile describes {} devices, but this run has {} ranks", env.profile->source,
                       cost_.devices(), world);
  const int H = static_cast<int>(model_.n_head), D = static_cast<int>(model_.n_embd / H);
  // A hybrid's softmax layers beside LASP: Ulysses where the degree divides the heads, else USP (Ring Attention
  // alone where no Ulysses degree fits), whose rings share one set of scratch buffers.
  const auto ring_scratch = std::make_shared<RingCache>(env.backend);
  auto usp_degree = [&](int d) {
    return static_cast<int>(usp_ulysses_degree(d, H, env.groups.ranks_per_node()));
  };
  for (int d = 2; d <= world; d *= 2) {
    // Ulysses and Ring move activations, in the backend's memory (NCCL on the GPU); LASP's small states go over MPI.
    const RunGroups::RankGroup& group = env.groups.group(d);
    for (int l = 0; l < model_.n_layer; ++l) {
      const bool linear = model_.linear_layer(l);
      const AttentionType type = linear ? AttentionType::linear : AttentionType::softmax;
      if (inner_ == FlexInner::lasp && linear)
        ops_[d].push_back(make_lasp_op(*group.host, env.backend, variant, H, D));
      else if (inner_ == FlexInner::lasp && H % d != 0 && usp_degree(d) == 1)
        ops_[d].push_back(make_ring_op(*group.device, ring_scratch, type, H, D));
      else if (inner_ == FlexInner::lasp && H % d != 0)
        ops_[d].push_back(make_usp_op(*group.device, env.backend, ring_scratch, H, D, usp_degree(d)));
      else
        ops_[d].push_back(make_ulysses_op(*group.device, env.backend, type, H, D));
      layer_ops_[d].push_back(ops_[d].back().get());
    }
  }
  spdlog::info("{}: groups of 1..{} ranks planned per micro-batch ({} degrees), {} inside; {} tokens a rank", name(),
               world, flexsp_config(env.config).degrees,
               inner_ != FlexInner::lasp     ? std::string("Ulysses")
               : model_.any_softmax() ? fmt::format("LASP ({}) in the linear layers, Ulysses (USP where the "
                                                    "degree does not divide the heads) in the softmax layers",
                                                    lasp_variant_name(variant))
                                      : fmt::format("LASP ({})", lasp_variant_name(variant)),
               capacity_);
}

FlexSequenceParallel::~FlexSequenceParallel() = default;

Feasibility FlexSequenceParallel::feasible(const Batch& batch) const {
  int64_t longest = 0;
  for (int64_t s : batch.sequence_lengths()) longest = std::max(longest, s);
  const int64_t most = cost_.token_capacity(cost_.max_degree());
  if (longest <= most) return {};
  return {false, fmt::format("flexsp: a document of {} tokens, above the {} tokens a group of all {} ranks holds",
                             longest, most, cost_.max_degree())};
}

const flexsp::Corrections& FlexSequenceParallel::planning_corrections() const {
  static const flexsp::Corrections none;
  if (!learns_) return none;
  return pinned_ ? *pinned_ : learned_;
}

// Runs on the planning thread too: it reads only what never changes after construction and its own arguments.
FlexSequenceParallel::Timed FlexSequenceParallel::timed_plan(const std::vector<int64_t>& lengths,
                                                             const flexsp::Corrections& corrections) const {
  const auto start = std::chrono::steady_clock::now();
  const cost::GroupCostModel corrected = corrections.apply(cost_);
  Timed t{choose_(lengths, corrected), 0, corrections.factors(cost_)};
  flexsp::check_batch_plan(t.choice.plan, corrected);  // a wrong plan never runs
  t.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return t;
}

void FlexSequenceParallel::prepare(const Batch& next) {
  if (groups_.world().rank() != 0) return;
  ++generation_;
  std::vector<int64_t> lengths = next.sequence_lengths();
  flexsp::Corrections corrections = planning_corrections();  // a copy: later steps update the learned ones
  pinned_.reset();
  if (ahead_.valid() && lengths == ahead_lengths_ && corrections.by_placement() == ahead_corrections_.by_placement())
    return;
  if (ahead_.valid()) ahead_.wait();  // one plan ahead at a time
  ahead_lengths_ = std::move(lengths);
  ahead_corrections_ = corrections;
  ahead_ = std::async(std::launch::async, [this, lengths = ahead_lengths_, corrections = std::move(corrections)] {
    return timed_plan(lengths, corrections);
  });
}

const FlexSequenceParallel::Timed& FlexSequenceParallel::plan(const Batch& batch, bool this_step) const {
  std::vector<int64_t> lengths = batch.sequence_lengths();
  if (lengths == planned_lengths_ && !planned_.choice.plan.micro_batches.empty() &&
      (!this_step || planned_generation_ == generation_))
    return planned_;
  if (ahead_.valid() && lengths == ahead_lengths_) {
    plan_ready_ = ahead_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    planned_ = ahead_.get();  // rethrows what planning threw
  } else {
    plan_ready_ = false;
    planned_ = timed_plan(lengths, planning_corrections());
  }
  planned_generation_ = generation_;
  planned_lengths_ = std::move(lengths);
  return planned_;
}

cost::StepEstimate FlexSequenceParallel::estimate(const Batch& batch, const cost::StepCostModel& cost) const {
  const flexsp::BatchPlan& p = plan(batch, true).choice.plan;
  cost::StepEstimate e;
  e.compute_s = p.time_s;  // the groups' compute and their all-to-alls, as the planner's cost model has them
  const auto passes = static_cast<int64_t>(p.micro_batches.size());  // stages 2 and 3 run as many on every rank
  e.comm_s = cost.gradient_reduction_s(passes) + cost.sharding_s(passes);
  e.seconds = e.compute_s + e.comm_s;
  int64_t per_rank = 0;
  double sent = cost.gradient_reduction_bytes(passes) + cost.sharding_bytes(passes);
  const double L = static_cast<double>(model_.n_layer);
  const double per_token = 8.0 * L * static_cast<double>(model_.n_embd * cost.run().bytes_per_value);
  const double states = 2.0 * L * cost_.exchange().state_bytes;  // LASP: a state out, a gradient back, per layer
  for (const flexsp::MicroBatchPlan& mb : p.micro_batches)
    for (const flexsp::GroupPlan& g : mb.groups) {
      const int64_t n = (g.tokens + g.degree - 1) / g.degree;
      per_rank = std::max(per_rank, n);
      if (g.first_device != 0 || g.degree == 1) continue;  // rank 0's share
      sent += inner_ == FlexInner::lasp ? states : per_token * static_cast<double>(n);
    }
  e.comm_bytes = static_cast<int64_t>(sent);
  e.peak_bytes = resident_memory_bytes(model_, per_rank, precision_, device_, recompute_, source_keeps(cost.run())) +
                 AdamW::memory_bytes(cost.optimizer_params()) + cost.gradient_shard_bytes();
  return e;
}

const flexsp::BatchPlan& FlexSequenceParallel::shared_plan(const Batch& batch) {
  Communicator& world = groups_.world();
  std::vector<int64_t> wire;
  if (world.rank() == 0) wire = encode(plan(batch, false).choice.plan);
  int64_t size = static_cast<int64_t>(wire.size());
  if (world.size() > 1) {
    world.broadcast(&size, 1, CommType::i64, 0);
    wire.resize(static_cast<std::size_t>(size));
    world.broadcast(wire.data(), size, CommType::i64, 0);
  }
  last_plan_ = world.rank() == 0 ? planned_.choice.plan : decode(wire);
  report_ = {};
  report_.plan_ms = world.rank() == 0 ? planned_.ms : -1;
  report_.plan_ready = plan_ready_;
  if (world.rank() == 0) {
    report_.choice = planned_.choice;
    report_.choice.plan = {};
    report_.corrections = planned_.corrections;
  }
  if (last_plan_.lengths != batch.sequence_lengths())
    throw_runtime_error("flexsp: the plan rank 0 sent is for {} documents, but this rank's batch has {}: a plan "
                        "applied to another batch",
                        last_plan_.lengths.size(), batch.num_sequences());
  return last_plan_;
}

std::vector<std::optional<GroupBatch>> FlexSequenceParallel::local_micro_batches(const Batch& batch,
                                                                                  const flexsp::BatchPlan& plan) {
  const int64_t me = groups_.position();
  std::vector<std::optional<GroupBatch>> out;
  for (const flexsp::MicroBatchPlan& mb : plan.micro_batches) {
    const auto mine = std::find_if(mb.groups.begin(), mb.groups.end(), [&](const flexsp::GroupPlan& g) {
      return g.first_device <= me && me < g.first_device + g.degree;
    });
    if (mine == mb.groups.end()) {
      out.emplace_back();
      continue;
    }
    Batch micro;  // the group's documents, in the plan's order, packed in one row
    for (int64_t k : mine->sequences) {
      const int32_t begin = batch.cu_seqlens[k], end = batch.cu_seqlens[k + 1];
      micro.tokens.insert(micro.tokens.end(), batch.tokens.begin() + begin, batch.tokens.begin() + end);
      micro.targets.insert(micro.targets.end(), batch.targets.begin() + begin, batch.targets.begin() + end);
      micro.positions.insert(micro.positions.end(), batch.positions.begin() + begin, batch.positions.begin() + end);
      micro.cu_seqlens.push_back(static_cast<int32_t>(micro.tokens.size()));
    }
    const int d = static_cast<int>(mine->degree);
    out.emplace_back(group_batch(std::move(micro), d > 1 ? groups_.group(d).host : nullptr,
                                 d > 1 ? layer_ops_.at(d).data() : nullptr));
  }
  return out;
}

FlexSequenceParallel::PlanReport FlexSequenceParallel::plan_report() const {
  PlanReport r = report_;
  for (const flexsp::MicroBatchPlan& mb : last_plan_.micro_batches) {
    if (!r.layout.empty()) r.layout += ' ';
    r.layout += flexsp::describe_groups(mb);
  }
  return r;
}

void FlexSequenceParallel::add_step_metrics(nlohmann::ordered_json& record) const {
  const PlanReport report = plan_report();
  if (report.layout.empty()) return;
  record["groups"] = report.layout;
  record["plan_ms"] = report.plan_ms >= 0 ? nlohmann::ordered_json(report.plan_ms) : nullptr;  // rank 0's
  record["plan_ready"] = report.plan_ready;
  if (report.plan_ms >= 0) {  // rank 0 planned: which plan ran and why
    const flexsp::PlanChoice& c = report.choice;
    const auto ms = [](double s) { return s >= 0 ? nlohmann::ordered_json(s * 1e3) : nlohmann::ordered_json(); };
    const auto degree = [](int64_t d) { return d > 0 ? nlohmann::ordered_json(d) : nlohmann::ordered_json(); };
    record["plan"] = flexsp::plan_kind_name(c.kind);
    record["plan_estimates"] = {{"flexsp_ms", ms(c.flexsp_s)},
                                {"batchada_ms", ms(c.batchada_s)},
                                {"batchada_degree", degree(c.batchada_degree)},
                                {"static_sp_ms", ms(c.static_s)},
                                {"static_sp_degree", degree(c.static_degree)}};
    nlohmann::ordered_json corrections = nlohmann::ordered_json::object();
    for (const auto& [d, factor] : report.corrections) corrections[std::to_string(d)] = factor;
    record["plan_corrections"] = std::move(corrections);
  }
  if (report.group_times.empty()) return;
  nlohmann::ordered_json times = nlohmann::ordered_json::array();
  for (const auto& micro : report.group_times) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (const GroupTime& g : micro)
      row.push_back({g.degree, g.estimated_ms, g.measured_ms, g.corrected_ms, g.with_reduction});
    times.push_back(std::move(row));
  }
  record["group_times"] = std::move(times);
}

StepSums FlexSequenceParallel::train(GPT& model, const Batch& batch, float loss_weight) {
  std::vector<std::optional<GroupBatch>> micro = local_micro_batches(batch, shared_plan(batch));
  const int M = static_cast<int>(micro.size());
  int last = -1;
  for (int i = 0; i < M; ++i)
    if (micro[i]) last = i;
  dp_.begin(M);  // at most every micro-batch on some rank (parallel.zero.stage 2 and 3 pad to it)
  StepSums sums;
  std::vector<double> timing(static_cast<std::size_t>(M) + 1, 0.0);  // [position, seconds of each micro-batch]
  timing[0] = groups_.position();
  for (int i = 0; i <= last; ++i) {
    if (!micro[i]) {  // this rank is in no group of micro-batch i
      dp_.skip_pass();
      continue;
    }
    if (i == last && overlap_reduction_) dp_.reduce_during_backward(model);  // earlier ones only accumulate
    const TokenBatch mb = micro[i]->view();
    const auto start = std::chrono::steady_clock::now();
    sums.loss_sum += model.forward_backward(mb, loss_weight);
    timing[i + 1] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sums.tokens += static_cast<double>(mb.num_tokens);
    sums.flops += model.flops(mb);
  }
  if (last < 0 || !overlap_reduction_) dp_.reduce_all(model);  // bucket by bucket, in the same order everywhere
  dp_.finish(model);
  double totals[3] = {sums.loss_sum, sums.tokens, sums.flops};
  dp_.sum(totals, 3);
  record_group_times(timing);
  return {totals[0], static_cast<double>(batch.num_targets()), totals[1], totals[2]};
}

// Every rank's micro-batch times reach rank 0, which sets each group's measured time (its slowest member) beside
// the plan's estimate. A rank's last micro-batch also carries the gradient reduction overlapped with its backward
// (its calls, and the other ranks' traffic competing for cores and links), which no estimate has: when the step has
// other groups, the corrections learn from those only.
void FlexSequenceParallel::record_group_times(const std::vector<double>& timing) {
  Communicator& world = groups_.world();
  const auto row = static_cast<int64_t>(timing.size());
  std::vector<double> all(static_cast<std::size_t>(row * world.size()));
  world.allgather(timing.data(), all.data(), row, CommType::f64);
  report_.group_times.clear();
  if (world.rank() != 0) return;
  std::vector<const double*> by_position(static_cast<std::size_t>(world.size()));
  for (int r = 0; r < world.size(); ++r) by_position[static_cast<std::size_t>(all[r * row])] = &all[r * row];
  std::vector<std::size_t> last_micro(static_cast<std::size_t>(world.size()), 0);  // by position
  for (std::size_t m = 0; m < last_plan_.micro_batches.size(); ++m)
    for (const flexsp::GroupPlan& g : last_plan_.micro_batches[m].groups)
      for (int64_t p = g.first_device; p < g.first_device + g.degree; ++p)
        last_micro[static_cast<std::size_t>(p)] = m;
  std::vector<flexsp::GroupSample> samples, without_reduction;
  for (std::size_t m = 0; m < last_plan_.micro_batches.size(); ++m) {
    std::vector<GroupTime> times;
    for (const flexsp::GroupPlan& g : last_plan_.micro_batches[m].groups) {
      double slowest = 0;
      bool with_reduction = false;
      for (int64_t p = g.first_device; p < g.first_device + g.degree; ++p) {
        slowest = std::max(slowest, by_position[static_cast<std::size_t>(p)][m + 1]);
        with_reduction |= overlap_reduction_ && world.size() > 1 && last_micro[static_cast<std::size_t>(p)] == m;
      }
      std::vector<int64_t> lengths;
      for (int64_t k : g.sequences) lengths.push_back(last_plan_.lengths[static_cast<std::size_t>(k)]);
      const double estimated = cost_.group_time_s(lengths, g.degree);  // the profile's, uncorrected
      if (!test_slowdown_.empty()) {
        const auto factor = test_slowdown_.find(g.degree);
        slowest = estimated * (factor == test_slowdown_.end() ? 1.0 : factor->second);
      }
      const auto factor = planned_.corrections.find(g.degree);
      const double corrected = estimated * (factor == planned_.corrections.end() ? 1.0 : factor->second);
      times.push_back({g.degree, estimated * 1e3, slowest * 1e3, corrected * 1e3, with_reduction});
      samples.push_back({{g.degree, cost_.nodes_spanned(g.degree)}, estimated, slowest});
      if (!with_reduction) without_reduction.push_back(samples.back());
    }
    report_.group_times.push_back(std::move(times));
  }
  if (learns_) learned_.observe(without_reduction.empty() ? samples : without_reduction);
}

nlohmann::json FlexSequenceParallel::checkpoint_state() const {
  const flexsp::Corrections& next = pinned_ ? *pinned_ : generation_ > 0 ? ahead_corrections_ : learned_;
  return {{"corrections", learned_.to_json()}, {"next_plan", next.to_json()}};
}

void FlexSequenceParallel::restore_state(const nlohmann::json& state) {
  if (state.is_null()) return;
  const std::string field = "selector state: strategies." + name();
  if (!state.is_object() || !state.contains("corrections") || !state.contains("next_plan"))
    throw_runtime_error("{}: needs 'corrections' and 'next_plan'", field);
  learned_ = flexsp::Corrections::from_json(state["corrections"], field + ".corrections");
  pinned_ = flexsp::Corrections::from_json(state["next_plan"], field + ".next_plan");
}

StepSums FlexSequenceParallel::evaluate(GPT& model, const Batch& batch) {
  double totals[2] = {0, 0};
  std::vector<std::optional<GroupBatch>> micro = local_micro_batches(batch, shared_plan(batch));
  dp_.begin(static_cast<int>(micro.size()), false);  // at most every micro-batch on some rank (stage 3 pads to it)
  for (std::optional<GroupBatch>& local : micro) {
    if (!local) {
      dp_.skip_pass();
      continue;
    }
    const TokenBatch mb = local->view();
    totals[0] += model.forward_loss(mb);
    totals[1] += static_cast<double>(mb.num_tokens);
  }
  dp_.finish(model);
  dp_.sum(totals, 2);
  return {totals[0], static_cast<double>(batch.num_targets()), totals[1], 0};
}

}  // namespace trident
