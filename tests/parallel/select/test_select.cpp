// The selector: the cost model's pieces, each static candidate's estimate, the choice on constructed workloads where
// each candidate must win, and (under mpirun, [mpi]) a stream of batches that switches strategy from step to step
// and still equals the single-rank step. Checks use CHECK, never REQUIRE, so a rank with a wrong result still joins
// the collectives that follow.
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/optim/adamw.h"
#include "kernels/common/error.h"
#include "parallel/atom/config.h"
#include "parallel/lasp/config.h"
#include "parallel/select/registry.h"
#include "parallel/select/selector.h"
#include "parallel/placement/recompute.h"
#include "parallel/static_sp/candidate.h"
#include "core/model/recompute.h"
#include "parallel/static_sp/config.h"
#include "parallel/static_sp/static_sp.h"
#include "support/assert_close.h"
#include "support/strategy_fixtures.h"
#include "support/fixtures.h"

using namespace trident;
using namespace trident::test;

namespace {

Config tiny_config(const std::string& attention) {
  Config c = tiny_strategy_config(attention, 256);
  c.train.batch_tokens = 256;
  return c;
}


// A cluster of `nodes` x `per_node` ranks whose links are slow to fill (0.01 GB/s, 5 us): a state of a few hundred
// bytes is cheap to pass, activations are not.
cost::Profile profile(int nodes, int per_node) {
  return cost::parse_profile(fmt::format(R"(
cluster: {{name: test, nodes: {}, devices_per_node: {}, device_memory_gb: 1}}
network:
  intra_node: {{bandwidth_gb_per_s: 0.01, latency_us: 5}}
  inter_node: {{bandwidth_gb_per_s: 0.005, latency_us: 20}}
compute: {{alpha1_s_per_token2: 1.0e-8, alpha2_s_per_token: 1.0e-5, beta1_s: 1.0e-4}}
)",
                                         nodes, per_node),
                             "test profile");
}

cost::RunShape shape(const Config& c, int world, int per_node) {
  return {.world = world,
          .nodes = world / per_node,
          .ranks_per_node = per_node,
          .n_layer = c.model.n_layer,
          .n_embd = c.model.n_embd,
          .n_head = c.model.n_head,
          .num_params = model_layout(c.model).num_params,
          .bytes_per_value = 4};
}

std::string chosen(const Comparison& c) { return c.cheapest < 0 ? "none" : c.options[c.cheapest].candidate->name(); }

std::vector<const Candidate*> pointers(const std::vector<std::unique_ptr<Candidate>>& owned) {
  std::vector<const Candidate*> out;
  for (const auto& c : owned) out.push_back(c.get());
  return out;
}

}  // namespace

TEST_CASE("the step cost model: compute, links, all-reduce, and a profile that is not this run's", "[select]") {
  const Config c = tiny_config("softmax");
  const cost::StepCostModel m = cost::StepCostModel::from_profile(profile(2, 2), shape(c, 4, 2));
  const std::vector<int64_t> lengths = {100, 50};
  CHECK(m.compute_s(lengths, 1) == Approx(1e-8 * (1e4 + 2500) + 1e-5 * 150 + 1e-4));
  CHECK(m.compute_s(lengths, 2) == Approx((1e-8 * (1e4 + 2500) + 1e-5 * 150) / 2 + 1e-4));
  CHECK(m.compute_s({}, 2) == 0);
  CHECK(m.link(2).latency_us == 5);   // a pair stays on its node
  CHECK(m.link(4).latency_us == 20);  // four ranks span both nodes
  CHECK(m.transfer_s(1e6, 2) == Approx(5e-6 + 1e6 / 1e7));
  CHECK(m.allgather_s(1e3, 4) == Approx(20e-6 + 3 * 1e3 / 5e6));
  CHECK(m.allreduce_s(4e6) == Approx(6 * (20e-6 + 1e6 / 5e6)));

  CHECK_THROWS_WITH(cost::StepCostModel::from_profile(profile(1, 2), shape(c, 4, 2)),
                    Catch::Contains("test profile") && Catch::Contains("1 node(s) x 2 device(s)") &&
                        Catch::Contains("4 rank(s)"));
  cost::Profile other = profile(2, 2);
  other.model = cost::ModelSection{"big", 32, 4096, 2};
  CHECK_THROWS_WITH(cost::StepCostModel::from_profile(other, shape(c, 4, 2)),
                    Catch::Contains("32 layers x 4096") && Catch::Contains("2 layers x 24"));
  cost::Profile no_network = profile(2, 2);
  no_network.network.reset();
  CHECK_THROWS_WITH(cost::StepCostModel::from_profile(no_network, shape(c, 4, 2)), Catch::Contains("'network'"));
}

TEST_CASE("each static candidate's estimate adds up its compute, its messages and the gradient all-reduce",
          "[select]") {
  const Config c = tiny_config("linear");
  const cost::StepCostModel m = cost::StepCostModel::from_profile(profile(1, 4), shape(c, 4, 4));
  const Batch b = random_documents({64, 64, 64, 64}, 1);  // one document a replica under dp
  const double L = 2, C = 24, state = 4 * 6 * 6 * 4, grads = 4.0 * static_cast<double>(model_layout(c.model).num_params);
  const double allreduce = m.allreduce_s(grads);

  const StaticCandidate dp(c, "dp", 1, 4, 256, Device::cpu);
  const cost::StepEstimate e_dp = dp.estimate(b, m);
  CHECK(e_dp.compute_s == Approx(m.compute_s(std::vector<int64_t>{64}, 1)));
  CHECK(e_dp.comm_s == Approx(allreduce));
  CHECK(e_dp.comm_bytes == static_cast<int64_t>(grads));
  CHECK(e_dp.seconds == Approx(e_dp.compute_s + e_dp.comm_s));
  CHECK(e_dp.peak_bytes == GPT::memory_bytes(c.model, 64, Precision::fp32, Device::cpu) +
                               AdamW::memory_bytes(model_layout(c.model).num_params));

  // one group of 4 holds the whole batch: 256 tokens, 64 a rank
  const StaticCandidate ulysses(c, "ulysses", 4, 4, 256, Device::cpu);
  const cost::StepEstimate e_u = ulysses.estimate(b, m);
  CHECK(e_u.compute_s == Approx(m.compute_s(std::vector<int64_t>{64, 64, 64, 64}, 4)));
  CHECK(e_u.comm_s == Approx(L * 4 * m.transfer_s(2 * 64 * C * 4, 4) + allreduce));
  CHECK(e_u.comm_bytes == static_cast<int64_t>(L * 8 * 64 * C * 4 + grads));

  const StaticCandidate lasp1(c, "lasp1", 4, 4, 256, Device::cpu), lasp2(c, "lasp2", 4, 4, 256, Device::cpu);
  CHECK(lasp1.estimate(b, m).comm_s == Approx(L * 2 * 3 * m.transfer_s(state, 4) + allreduce));
  CHECK(lasp2.estimate(b, m).comm_s == Approx(L * 2 * m.allgather_s(state, 4) + allreduce));

  const Config s = tiny_config("softmax");
  const StaticCandidate ring(s, "ring", 4, 4, 256, Device::cpu);
  CHECK(ring.estimate(b, m).comm_s == Approx(L * 10 * m.transfer_s(2 * 64 * C * 4, 4) + allreduce));

  // train.recompute: full recomputes the forward of all but the last layer, a third of their forward and backward;
  // auto only the layers a pass needs: none for 64 tokens where a rank holds 256, all but the last at 256
  const Precision fp32 = Precision::fp32;
  Config tight = c;  // the least memory (in steps of 10 KB) where full recomputation holds 256 tokens a rank
  tight.train.recompute = "full";
  tight.device.memory_gb = 0;
  do tight.device.memory_gb += 1e-5;
  while (resident_memory_bytes(tight.model, 256, fp32, Device::cpu, "full") +
             AdamW::memory_bytes(model_layout(tight.model).num_params) >
         static_cast<int64_t>(gib_to_bytes(tight.device.memory_gb)));
  tight.train.recompute = "none";
  REQUIRE(resident_capacity(tight, fp32, Device::cpu, 1) < 256);  // where keeping every array holds fewer
  for (const char* recompute : {"full", "auto"}) {
    INFO(recompute);
    Config r = tight;
    r.train.recompute = recompute;
    cost::RunShape run = shape(r, 4, 4);
    run.recompute = recompute;
    run.recompute_room_bytes = as_needed_room(r, fp32, Device::cpu, 1);
    const int64_t capacity = resident_capacity(r, fp32, Device::cpu, 1);
    REQUIRE(capacity >= 256);
    const cost::StepCostModel mr = cost::StepCostModel::from_profile(profile(1, 4), run);
    const StaticCandidate recomputing(r, "dp", 1, 4, capacity, Device::cpu);
    const double plain = m.compute_s(std::vector<int64_t>{64}, 1);
    CHECK(recomputing.estimate(b, mr).compute_s == Approx(std::string(recompute) == "full" ? plain * (1 + 1 / (3 * L))
                                                                                            : plain));
    const Batch whole = random_documents({64, 64, 64, 64}, 1);
    const StaticCandidate group(r, "ulysses", 4, 4, capacity, Device::cpu);  // 256 tokens, 64 a rank
    CHECK(group.estimate(whole, mr).compute_s ==
          Approx(std::string(recompute) == "full" ? e_u.compute_s * (1 + 1 / (3 * L)) : e_u.compute_s));
    const Batch long_one = random_documents({256}, 3);  // 256 tokens on one rank of dp
    const double layers = std::string(recompute) == "full"
                              ? 1
                              : SubModelRunner::layers_recomputed(r.model, fp32, run.recompute_room_bytes, 256);
    if (std::string(recompute) == "auto") CHECK(layers == 1);  // 256 tokens do not fit keeping both layers' arrays
    CHECK(recomputing.estimate(long_one, mr).compute_s ==
          Approx(m.compute_s(std::vector<int64_t>{256}, 1) * (1 + layers / (3 * L))));
  }

  // two replicas of a pair: the slower replica sets the time
  const StaticCandidate pairs(c, "ulysses", 2, 4, 256, Device::cpu);
  const Batch uneven = random_documents({120, 10, 10}, 2);  // replica 0 takes the 120-token document alone
  CHECK(pairs.estimate(uneven, m).compute_s == Approx(m.compute_s(std::vector<int64_t>{120}, 2)));
}

TEST_CASE("the selector picks the candidate each constructed workload needs", "[select]") {
  // A described 4-rank node: the choice is a pure function of batch and profile.
  const int W = 4;
  const Config linear = tiny_config("linear"), softmax = tiny_config("softmax");
  const cost::StepCostModel m_linear = cost::StepCostModel::from_profile(profile(1, W), shape(linear, W, W));
  const cost::StepCostModel m_softmax = cost::StepCostModel::from_profile(profile(1, W), shape(softmax, W, W));
  const int64_t capacity = 64;  // tokens a rank

  SECTION("short documents on a small model: data parallelism (no group pays for messages it does not need)") {
    const auto owned = plan_candidates(linear, W, capacity, Device::cpu);
    const Comparison c = compare(pointers(owned), random_documents(std::vector<int>(16, 12), 3), &m_linear);
    CHECK(chosen(c) == "dp");
    CHECK(c.options.size() == 5);  // dp, lasp1 and ulysses at 2 and 4 ranks (variant ring: lasp1 only)
  }
  SECTION("one linear document longer than a rank holds: LASP, whose messages do not grow with the document") {
    const auto owned = plan_candidates(linear, W, capacity, Device::cpu);
    const Comparison c = compare(pointers(owned), random_documents({200}, 4), &m_linear);
    CHECK(chosen(c) == "lasp1 sp=4");
    CHECK_FALSE(c.options[0].feasibility.ok);  // dp: 200 tokens on one rank
    CHECK_THAT(c.options[0].feasibility.reason, Catch::Contains("above its activation capacity of 64 tokens"));
  }
  SECTION("one long softmax document: a sequence-parallel group of four (Ulysses or Ring)") {
    const auto owned = plan_candidates(softmax, W, capacity, Device::cpu);
    const Comparison c = compare(pointers(owned), random_documents({200}, 5), &m_softmax);
    CHECK((chosen(c) == "ulysses sp=4" || chosen(c) == "ring sp=4"));
  }
  SECTION("a document no group holds: no candidate, every reason named") {
    const auto owned = plan_candidates(softmax, W, capacity, Device::cpu);
    const Comparison c = compare(pointers(owned), random_documents({300}, 6), &m_softmax);
    CHECK(c.cheapest == -1);
    CHECK_THAT(c.why_none(), Catch::Contains("no parallel strategy can run this batch") &&
                                 Catch::Contains("dp: a micro-batch of 300 tokens") && Catch::Contains("ring sp=4"));
  }
  SECTION("corrections scale the estimates: a measured-slow candidate loses") {
    const auto owned = plan_candidates(linear, W, capacity, Device::cpu);
    const std::vector<double> corrections = {10, 1, 1, 1, 1};
    CHECK(chosen(compare(pointers(owned), random_documents(std::vector<int>(16, 12), 3), &m_linear, corrections)) != "dp");
  }
}

TEST_CASE("the candidates of each parallel.strategy, and those a model cannot run", "[select]") {
  Config c = tiny_config("linear");
  auto names = [](const Config& config, int world) {
    std::string out;
    for (const CandidateSpec& l : run_candidates(config, world)) out += l.method + std::to_string(l.degree) + " ";
    return out;
  };
  CHECK(names(c, 4) == "dp1 lasp12 ulysses2 lasp14 ulysses4 flexsp0 flexsp-lasp0 ");
  lasp_config(c).variant = "auto";
  CHECK(names(c, 4) == "dp1 lasp12 lasp22 ulysses2 lasp14 lasp24 ulysses4 flexsp0 flexsp-lasp0 ");
  CHECK(names(c, 6) == "dp1 lasp12 lasp22 ulysses2 ");  // powers of two that divide the world; FlexSP needs all
  CHECK(names(c, 1) == "dp1 ");
  // ATOM's averaging peers join auto when the run asks for averaging rounds of every peer
  atom_config(c).average_every = 4;
  CHECK(names(c, 2) == "dp1 atom1 lasp12 lasp22 ulysses2 flexsp0 flexsp-lasp0 ");
  CHECK(names(c, 1) == "dp1 ");  // one rank has no peers
  atom_config(c).round_deadline_ms = 50;  // peers stepping apart cannot be chosen per step
  CHECK(names(c, 2) == "dp1 lasp12 lasp22 ulysses2 flexsp0 flexsp-lasp0 ");
  atom_config(c).average_every = 0;
  atom_config(c).round_deadline_ms = 0;
  c.model.n_head = 2;
  // Ulysses (and FlexSP with Ulysses inside) split heads; FlexSP with LASP inside does not
  CHECK(names(c, 4) == "dp1 lasp12 lasp22 ulysses2 lasp14 lasp24 flexsp-lasp0 ");
  c.parallel.strategy = "dp";
  CHECK(names(c, 4) == "dp1 ");
  c.parallel.strategy = "sp";
  sp_config(c).size = 2;
  CHECK(names(c, 4) == "lasp2 ");  // variant auto: measured on the group when built
  sp_config(c).method = "ring";
  CHECK_THROWS_WITH(run_candidates(c, 4), Catch::Contains("parallel.sp.method: 'ring'"));
  sp_config(c).method = "lasp";
  sp_config(c).size = 3;
  CHECK_THROWS_WITH(run_candidates(c, 4), Catch::Contains("parallel.sp.size = 3"));
  c.parallel.strategy = "atom";  // alone: every rank a peer with its own swapped replica
  CHECK(names(c, 1) == "atom1 ");
  CHECK(names(c, 4) == "atom1 ");
  c.device.backend = "cuda";  // pinned host store, a copy stream beside the compute
  CHECK(names(c, 4) == "atom1 ");
  atom_config(c).emulate_copy_gb_per_s = 1;
  CHECK_THROWS_WITH(run_candidates(c, 4), Catch::Contains("parallel.atom.emulate_copy_gb_per_s = 1"));
}

TEST_CASE("the selector's corrections: measured steps move them, mode model ignores them, state round-trips",
          "[select]") {
  // One rank, two data-parallel candidates under different names are not possible; a 1-rank world has one candidate.
  // The corrections are exercised through state() and restore().
  const Config c = tiny_config("linear");
  RunGroups groups(world(), {}, {1});
  const StrategyEnv env{groups, cpu_backend(), c, 256};
  std::vector<std::unique_ptr<Strategy>> one;
  one.push_back(std::make_unique<StaticSequenceParallel>(env, "dp", 1));
  Selector selector(std::move(one), cost::StepCostModel::from_profile(profile(1, world().size()),
                                                                      shape(c, world().size(), world().size())),
                    Selector::Mode::measured, world());
  const Batch b = random_documents({20, 20}, 1);      // longest 20: shape 32
  const Batch other = random_documents({40, 10}, 2);  // longest 40: shape 64
  CHECK(Selector::shape_of(b) == 32);
  CHECK(Selector::shape_of(other) == 64);
  const Selector::Choice first = selector.choose(b);
  REQUIRE(first.strategy);
  const auto ratio = [&](const char* shape) {
    return selector.state()["corrections"]["dp"]["by_longest"][shape]["ratio"].get<double>();
  };
  if (world().rank() == 0) {
    CHECK(first.shape == 32);
    const double estimate = first.comparison.options[0].estimate->seconds;
    selector.observe(first, 100 * estimate);  // the first step allocates: not counted
    CHECK(selector.state()["corrections"]["dp"]["by_longest"].empty());
    CHECK(selector.choose(b).comparison.options[0].correction == 1.0);  // nothing measured yet
    selector.observe(first, 3 * estimate);  // the first measured step of a shape sets its correction
    CHECK(ratio("32") == Approx(3.0));
    selector.observe(first, estimate);  // later ones move it halfway
    CHECK(ratio("32") == Approx(2.0));
    CHECK(selector.state()["corrections"]["dp"]["runs"] == 3);
    CHECK(selector.state()["corrections"]["dp"]["by_longest"]["32"]["steps"] == 2);
    CHECK(selector.choose(b).comparison.options[0].predicted_s == Approx(2 * estimate));
    // Another shape, not measured yet, takes the mean of what was; once measured, its own ratio.
    const Selector::Choice second = selector.choose(other);
    CHECK(second.comparison.options[0].correction == Approx(2.0));
    const double other_estimate = second.comparison.options[0].estimate->seconds;
    selector.observe(second, 0.5 * other_estimate);
    CHECK(ratio("64") == Approx(0.5));
    CHECK(ratio("32") == Approx(2.0));
    CHECK(selector.choose(other).comparison.options[0].correction == Approx(0.5));
    CHECK(selector.choose(b).comparison.options[0].correction == Approx(2.0));
  }  // one candidate: choose() is local, the other ranks need not follow
  const nlohmann::json saved = selector.state();
  selector.restore(nlohmann::json{{"mode", "measured"}, {"corrections", nlohmann::json::object()}});
  selector.restore(saved);
  CHECK(selector.state() == saved);
  // A checkpoint of the version that kept one correction per candidate: its corrections start over.
  selector.restore(nlohmann::json{{"corrections", {{"dp", {{"ratio", 2.0}, {"steps", 3}}}}}});
  CHECK(selector.state()["corrections"].empty());
  const auto with = [](nlohmann::json by_longest) {
    return nlohmann::json{{"corrections", {{"dp", {{"runs", 3}, {"by_longest", by_longest}}}}}};
  };
  CHECK_THROWS_WITH(selector.restore(with({{"32", {{"ratio", -1}, {"steps", 1}}}})),
                    Catch::Contains("corrections.dp.by_longest.32"));
  CHECK_THROWS_WITH(selector.restore(with({{"48", {{"ratio", 1}, {"steps", 1}}}})),
                    Catch::Contains("corrections.dp.by_longest.48: the key is not a power of two"));
  CHECK_THROWS_WITH(selector.restore(with({{"x", {{"ratio", 1}, {"steps", 1}}}})),
                    Catch::Contains("not a power of two"));
  const nlohmann::json no_runs{{"corrections", {{"dp", {{"by_longest", nlohmann::json::object()}}}}}};
  CHECK_THROWS_WITH(selector.restore(no_runs),
                    Catch::Contains("corrections.dp: needs a non-negative integer 'runs'"));
  CHECK_THROWS_WITH(selector.restore(nlohmann::json::array()), Catch::Contains("corrections"));
}

namespace {

// A candidate with a set estimate that never trains: the selector's choice alone is under test.
class FixedEstimate final : public Strategy {
 public:
  FixedEstimate(std::string name, double seconds) : name_(std::move(name)), seconds_(seconds) {}
  std::string name() const override { return name_; }
  std::string method() const override { return "dp"; }
  int degree() const override { return 1; }
  Feasibility feasible(const Batch&) const override { return {}; }
  cost::StepEstimate estimate(const Batch&, const cost::StepCostModel&) const override {
    cost::StepEstimate e;
    e.seconds = e.compute_s = seconds_;
    return e;
  }
  StepSums train(GPT&, const Batch&, float) override { return {}; }
  StepSums evaluate(GPT&, const Batch&) override { return {}; }

 private:
  std::string name_;
  double seconds_;
};

}  // namespace

TEST_CASE("auto never picks a candidate its own measurements on the batch's shape show slower than another measured "
          "one", "[select]") {
  if (world().size() != 1) return;  // rank 0 alone: choose() needs no broadcast
  const Config c = tiny_config("linear");
  const auto step_cost = cost::StepCostModel::from_profile(profile(1, 1), shape(c, 1, 1));
  const Batch b = random_documents({20, 20}, 1);
  const std::string shape_key = std::to_string(Selector::shape_of(b));
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    // Four candidates whose estimates are off by different factors, measured with noise.
    std::vector<std::unique_ptr<Strategy>> owned;
    std::map<std::string, double> estimate, truth;
    std::uniform_real_distribution<double> spread(0.5, 4.0), noise(0.8, 1.25);
    for (const char* name : {"a", "b", "c", "d"}) {
      estimate[name] = 0.01 * spread(rng);
      truth[name] = spread(rng);
      owned.push_back(std::make_unique<FixedEstimate>(name, estimate[name]));
    }
    Selector selector(std::move(owned), step_cost, Selector::Mode::measured, world());
    int picked_measured = 0;
    for (int step = 0; step < 40; ++step) {
      const Selector::Choice choice = selector.choose(b);
      REQUIRE(choice.strategy);
      const nlohmann::json corrections = selector.state()["corrections"];
      // The predictions of the candidates measured on this shape, from their own ratios.
      std::map<std::string, double> measured;
      for (const auto& [name, history] : corrections.items())
        if (history["by_longest"].contains(shape_key))
          measured[name] = estimate[name] * history["by_longest"][shape_key]["ratio"].get<double>();
      const std::string name = choice.strategy->name();
      if (measured.count(name)) {
        ++picked_measured;
        CHECK(choice.comparison.options[choice.index].predicted_s == Approx(measured[name]));
        for (const auto& [other, predicted] : measured) {
          INFO("trial " << trial << " step " << step << ": picked " << name << " over measured " << other);
          CHECK(measured[name] <= predicted);
        }
      }
      selector.observe(choice, estimate[name] * truth[name] * noise(rng));
    }
    CHECK(picked_measured > 20);  // exploration ends: most steps run a measured candidate
  }
  // An estimate that is not a number never wins over one that is, wherever it is listed.
  std::vector<std::unique_ptr<Strategy>> owned;
  owned.push_back(std::make_unique<FixedEstimate>("broken", std::nan("")));
  owned.push_back(std::make_unique<FixedEstimate>("fine", 1.0));
  Selector selector(std::move(owned), step_cost, Selector::Mode::measured, world());
  CHECK(selector.choose(b).strategy->name() == "fine");
}

TEST_CASE("a stream alternating short-document and long-document batches switches strategy and equals the "
          "single-rank step", "[mpi][select]") {
  const int W = world().size();
  for (const char* attention : {"linear", "softmax", "hybrid"}) {
    Config c = tiny_config(attention);
    lasp_config(c).variant = "auto";
    const int64_t capacity = (200 + W - 1) / W;  // the long document fits only a group of all the ranks
    RunGroups groups(world(), {}, candidate_degrees(c, W));
    cost::Profile p = profile(1, W);
    p.model = cost::ModelSection{"tiny", c.model.n_layer, c.model.n_embd, 4};
    const StrategyEnv env{groups, cpu_backend(), c, capacity, &p};
    Selector selector(make_strategies(env), cost::StepCostModel::from_profile(p, shape(c, W, W)),
                      Selector::Mode::model, world());
    GPT model(c.model, 256, test_allocator());  // holds the single-rank reference's 200 tokens too
    model.init_weights(9);
    const std::vector<Batch> stream = {random_documents(std::vector<int>(2 * W, 10), 1), random_documents({200}, 2),
                                       random_documents(std::vector<int>(2 * W, 12), 3), random_documents({200}, 4)};
    std::vector<std::string> ran;
    for (const Batch& b : stream) {
      const TokenBatch whole{b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(),
                             b.num_tokens(), b.num_sequences()};
      int64_t targets = 0;
      for (int32_t t : b.targets) targets += t >= 0;
      model.zero_grads();
      const double expected_loss = model.forward_backward(whole, 1.0f / static_cast<float>(targets));
      const std::vector<float> expected(model.grads(), model.grads() + model.num_params());
      const Selector::Choice choice = selector.choose(b);
      CHECK(choice.strategy);
      if (!choice.strategy) continue;
      ran.push_back(choice.strategy->name());
      model.zero_grads();
      const StepSums sums = choice.strategy->train(model, b, 1.0f / static_cast<float>(targets));
      INFO(attention << " on " << W << " ranks: " << choice.strategy->name());
      CHECK(sums.loss_sum == Approx(expected_loss).epsilon(1e-5));
      check_close_per_tensor("gradient through " + choice.strategy->name(), model.layout(),
                             std::vector<float>(model.grads(), model.grads() + model.num_params()), expected, 1e-5);
    }
    INFO(attention << " on " << W << " ranks");
    if (W == 1) {
      CHECK(ran == std::vector<std::string>(4, "dp"));
    } else {
      // short documents: data parallelism, or FlexSP's single-rank groups; the long one: a group of all ranks
      const std::string group = "sp=" + std::to_string(W);
      for (int i : {0, 2}) CHECK_THAT(ran[i], Catch::Equals("dp") || Catch::StartsWith("flexsp"));
      for (int i : {1, 3}) CHECK_THAT(ran[i], Catch::EndsWith(group) || Catch::StartsWith("flexsp"));
      if (std::string(attention) == "linear") CHECK_THAT(ran[1], Catch::Contains("lasp"));  // static or in FlexSP
    }
  }
}
