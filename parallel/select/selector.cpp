#include "parallel/select/selector.h"

#include <fmt/core.h>

#include "kernels/common/error.h"

namespace trident {

std::string Comparison::why_none() const {
  std::string reasons;
  for (const Option& o : options) reasons += (reasons.empty() ? "" : "; ") + o.feasibility.reason;
  return "no parallel strategy can run this batch: " + reasons;
}

Comparison compare(std::span<const Candidate* const> candidates, const Batch& batch, const cost::StepCostModel* cost,
                   std::span<const double> corrections) {
  Comparison c;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    Option o;
    o.candidate = candidates[i];
    o.feasibility = candidates[i]->feasible(batch);
    if (corrections.size() == candidates.size()) o.correction = corrections[i];
    if (o.feasibility.ok && cost) {
      o.estimate = candidates[i]->estimate(batch, *cost);
      o.predicted_s = o.estimate->seconds * o.correction;
    }
    if (o.feasibility.ok && (c.cheapest < 0 || o.predicted_s < c.options[c.cheapest].predicted_s))
      c.cheapest = static_cast<int>(i);
    c.options.push_back(std::move(o));
  }
  return c;
}

Selector::Selector(std::vector<std::unique_ptr<Strategy>> strategies, std::optional<cost::StepCostModel> cost,
                   Mode mode, Communicator& world)
    : strategies_(std::move(strategies)), cost_(std::move(cost)), mode_(mode), world_(world) {
  TRIDENT_CHECK(!strategies_.empty(), "a selector needs at least one strategy");
  TRIDENT_CHECK(cost_ || strategies_.size() == 1, "{} strategies to choose from and no cost model",
                strategies_.size());
  for (const auto& s : strategies_) candidates_.push_back(s.get());
}

Selector::Choice Selector::choose(const Batch& batch) {
  Choice choice;
  int32_t index = -1;
  if (world_.rank() == 0) {
    // A candidate not yet measured takes the mean correction of those that were: the cost model tends to be off by
    // the same factor for all of them on one machine.
    double sum = 0, measured = 0;
    for (const auto& [name, c] : corrections_)
      if (c.steps > 1) sum += c.ratio, ++measured;
    const double prior = mode_ == Mode::measured && measured > 0 ? sum / measured : 1.0;
    std::vector<double> corrections;
    for (const Candidate* c : candidates_) {
      const auto it = corrections_.find(c->name());
      const bool known = mode_ == Mode::measured && it != corrections_.end() && it->second.steps > 1;
      corrections.push_back(known ? it->second.ratio : prior);
    }
    choice.comparison = compare(candidates_, batch, cost_ ? &*cost_ : nullptr, corrections);
    index = choice.comparison.cheapest;
  }
  if (world_.rank() != 0 && candidates_.size() == 1)  // feasibility is pure: no broadcast needed for one candidate
    index = candidates_.front()->feasible(batch).ok ? 0 : -1;
  if (world_.size() > 1 && candidates_.size() > 1) world_.broadcast(&index, 1, CommType::i32, 0);
  if (index < 0) {  // feasibility is pure: every rank can name the reasons rank 0 found
    choice.why_none = (world_.rank() == 0 ? choice.comparison : compare(candidates_, batch, nullptr)).why_none();
    return choice;
  }
  choice.index = index;
  choice.strategy = strategies_[index].get();
  return choice;
}

void Selector::prepare(const Batch& next) {
  for (const auto& s : strategies_) s->prepare(next);
}

void Selector::observe(const Choice& choice, double seconds) {
  if (world_.rank() != 0 || mode_ != Mode::measured || !cost_ || choice.comparison.options.empty()) return;
  const Option& o = choice.comparison.options[choice.index];
  Correction& c = corrections_[o.candidate->name()];
  if (++c.steps == 1 || !o.estimate || o.estimate->seconds <= 0) return;  // the first step allocates buffers
  const double ratio = seconds / o.estimate->seconds;
  c.ratio = c.steps == 2 ? ratio : 0.5 * c.ratio + 0.5 * ratio;
}

nlohmann::json Selector::state() const {
  nlohmann::json corrections = nlohmann::json::object();
  for (const auto& [name, c] : corrections_) corrections[name] = {{"ratio", c.ratio}, {"steps", c.steps}};
  return {{"mode", mode_ == Mode::model ? "model" : "measured"}, {"corrections", corrections}};
}

void Selector::restore(const nlohmann::json& state) {
  if (state.is_null()) return;
  const auto bad = [](const std::string& what) { throw_runtime_error("selector state: {}", what); };
  if (!state.is_object() || !state.contains("corrections") || !state["corrections"].is_object())
    bad("no 'corrections' object");
  std::map<std::string, Correction> restored;
  for (const auto& [name, c] : state["corrections"].items()) {
    if (!c.is_object() || !c.contains("ratio") || !c["ratio"].is_number() || !c.contains("steps") ||
        !c["steps"].is_number_integer() || c["ratio"].get<double>() <= 0 || c["steps"].get<int64_t>() < 0)
      bad(fmt::format("corrections.{}: needs a positive 'ratio' and a non-negative integer 'steps'", name));
    restored[name] = {c["ratio"].get<double>(), c["steps"].get<int64_t>()};
  }
  corrections_ = std::move(restored);
}

}  // namespace trident
