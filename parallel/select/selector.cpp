#include "parallel/select/selector.h"

#include <cmath>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "kernels/common/error.h"

namespace trident {

std::string Comparison::why_none() const {
  std::string reasons;
  for (const Option& o : options) reasons += (reasons.empty() ? "" : "; ") + o.feasibility.reason;
  return "no parallel strategy can run this batch: " + reasons;
}

namespace {
// a < b, a prediction that is not a number (an estimate gone wrong) after every one that is
bool cheaper(double a, double b) { return a < b || (std::isnan(b) && !std::isnan(a)); }
}  // namespace

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
    if (o.feasibility.ok && (c.cheapest < 0 || cheaper(o.predicted_s, c.options[c.cheapest].predicted_s)))
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

int64_t Selector::shape_of(const Batch& batch) {
  int64_t bound = 1;
  while (bound < batch.longest_sequence()) bound *= 2;
  return bound;
}

double Selector::correction(const std::string& name, int64_t shape) const {
  if (mode_ != Mode::measured) return 1;
  if (const auto it = history_.find(name); it != history_.end())
    if (const auto known = it->second.by_shape.find(shape); known != it->second.by_shape.end())
      return known->second.ratio;
  // Not measured on this shape: the mean over the candidates that were, else over every shape measured.
  double same_shape = 0, everything = 0;
  int same_count = 0, count = 0;
  for (const auto& [other, history] : history_)
    for (const auto& [s, c] : history.by_shape) {
      everything += c.ratio, ++count;
      if (s == shape) same_shape += c.ratio, ++same_count;
    }
  if (same_count > 0) return same_shape / same_count;
  return count > 0 ? everything / count : 1.0;
}

Selector::Choice Selector::choose(const Batch& batch) {
  Choice choice;
  int32_t index = -1;
  if (world_.rank() == 0) {
    choice.shape = shape_of(batch);
    std::vector<double> corrections;
    for (const Candidate* c : candidates_) corrections.push_back(correction(c->name(), choice.shape));
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
  History& h = history_[o.candidate->name()];
  if (++h.runs == 1 || !o.estimate || o.estimate->seconds <= 0) return;  // the first step allocates buffers
  const double ratio = seconds / o.estimate->seconds;
  Correction& c = h.by_shape[choice.shape];
  c.ratio = c.steps == 0 ? ratio : 0.5 * c.ratio + 0.5 * ratio;
  ++c.steps;
}

nlohmann::json Selector::state() const {
  nlohmann::json corrections = nlohmann::json::object();
  for (const auto& [name, h] : history_) {
    nlohmann::json by_longest = nlohmann::json::object();
    for (const auto& [shape, c] : h.by_shape)
      by_longest[std::to_string(shape)] = {{"ratio", c.ratio}, {"steps", c.steps}};
    corrections[name] = {{"runs", h.runs}, {"by_longest", by_longest}};
  }
  nlohmann::json state = {{"mode", mode_ == Mode::model ? "model" : "measured"}, {"corrections", corrections}};
  nlohmann::json own = nlohmann::json::object();
  for (const auto& s : strategies_)
    if (nlohmann::json kept = s->checkpoint_state(); !kept.is_null()) own[s->name()] = std::move(kept);
  if (!own.empty()) state["strategies"] = std::move(own);
  return state;
}

void Selector::restore(const nlohmann::json& state) {
  if (state.is_null()) return;
  const auto bad = [](const std::string& what) { throw_runtime_error("selector state: {}", what); };
  const auto count = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() >= 0;
  };
  if (!state.is_object() || !state.contains("corrections") || !state["corrections"].is_object())
    bad("no 'corrections' object");
  std::map<std::string, History> restored;
  for (const auto& [name, h] : state["corrections"].items()) {
    if (h.is_object() && h.contains("ratio") && !h.contains("by_longest")) {  // one correction per candidate
      spdlog::info("selector state: corrections.{} holds one correction for every batch shape: it starts over", name);
      continue;
    }
    if (!h.is_object() || !count(h, "runs") || !h.contains("by_longest") || !h["by_longest"].is_object())
      bad(fmt::format("corrections.{}: needs a non-negative integer 'runs' and a 'by_longest' object", name));
    History& history = restored[name];
    history.runs = h["runs"].get<int64_t>();
    for (const auto& [shape, c] : h["by_longest"].items()) {
      const std::string field = fmt::format("corrections.{}.by_longest.{}", name, shape);
      int64_t bound = 0;
      try {
        std::size_t used = 0;
        bound = std::stoll(shape, &used);
        if (used != shape.size()) bound = 0;
      } catch (const std::exception&) {
      }
      if (bound <= 0 || (bound & (bound - 1)) != 0) bad(field + ": the key is not a power of two");
      if (!c.is_object() || !c.contains("ratio") || !c["ratio"].is_number() || c["ratio"].get<double>() <= 0 ||
          !count(c, "steps"))
        bad(field + ": needs a positive 'ratio' and a non-negative integer 'steps'");
      history.by_shape[bound] = {c["ratio"].get<double>(), c["steps"].get<int64_t>()};
    }
  }
  if (const auto own = state.find("strategies"); own != state.end()) {
    if (!own->is_object()) bad("'strategies' is not an object");
    for (const auto& s : strategies_)
      if (const auto kept = own->find(s->name()); kept != own->end()) s->restore_state(*kept);
  }
  history_ = std::move(restored);
}

}  // namespace trident
