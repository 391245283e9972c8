#include "parallel/static_sp/entry.h"

#include "parallel/lasp/config.h"
#include "parallel/static_sp/candidate.h"
#include "parallel/static_sp/config.h"
#include "parallel/sp/model_op.h"
#include "parallel/static_sp/static_sp.h"

namespace trident {

namespace {

std::vector<CandidateSpec> dp_candidates(const Config&, int) { return {{"dp", 1}}; }

std::vector<CandidateSpec> sp_alone(const Config& config, int world) {
  const SpConfig& p = sp_config(config);
  const std::string& variant = lasp_config(config).variant;
  std::string method = p.method;
  if (method == "lasp" && variant != "auto") method = variant;
  // A hybrid's softmax layers run parallel.sp.softmax_method beside LASP.
  if (config.model.attention == "hybrid" && p.method == "lasp") method += "+" + p.softmax_method;
  check_static_candidate(config.model, method, static_cast<int>(p.size), world);
  return {{method, static_cast<int>(p.size)}};
}

// By group size, then lasp1, lasp2, ulysses, ring, usp (for a hybrid: each LASP variant beside ulysses, ring and usp):
// what the model can run on each power-of-two size dividing the world.
std::vector<CandidateSpec> sp_under_auto(const Config& config, int world) {
  const std::string& variant = lasp_config(config).variant;
  const ModelConfig& m = config.model;
  std::vector<CandidateSpec> out;
  for (int d = 2; d <= world; d *= 2) {
    if (world % d != 0) break;
    std::vector<std::string> lasp;
    if (variant != "lasp2") lasp.push_back("lasp1");
    if (variant != "lasp1") lasp.push_back("lasp2");
    if (m.attention == "linear")
      for (const std::string& v : lasp) out.push_back({v, d});
    // USP where it can be neither Ulysses (Ulysses degree d) nor Ring (degree 1): its degree also depends on the
    // node layout, not known here (on one node it is gcd(d, H))
    const int64_t u = usp_ulysses_degree(d, m.n_head, d);
    std::vector<std::string> softmax = {"ring"};
    if (m.n_head % d == 0) softmax.insert(softmax.begin(), "ulysses");
    if (u > 1 && u < d) softmax.push_back("usp");
    if (m.attention == "hybrid")
      for (const std::string& method : softmax)
        for (const std::string& v : lasp) out.push_back({v + "+" + method, d});
    if (m.n_head % d == 0) out.push_back({"ulysses", d});
    if (m.attention == "softmax")
      for (const std::string& method : softmax)
        if (method != "ulysses") out.push_back({method, d});
  }
  return out;
}

std::unique_ptr<Strategy> make(const StrategyEnv& env, const CandidateSpec& candidate) {
  return std::make_unique<StaticSequenceParallel>(env, candidate.method, candidate.degree);
}

// "lasp" with its variant measured at run time is planned as both variants.
std::vector<std::unique_ptr<Candidate>> plan(const Config& config, const CandidateSpec& candidate, int world,
                                             int64_t capacity, Device device) {
  std::vector<std::unique_ptr<Candidate>> out;
  const LayerMethods methods = layer_methods(candidate.method);
  for (const char* variant : {"lasp1", "lasp2"}) {
    std::string method = candidate.method;
    if (methods.linear == "lasp") method = methods.softmax == "lasp" ? variant : variant + ("+" + methods.softmax);
    out.push_back(std::make_unique<StaticCandidate>(config, method, candidate.degree, world, capacity, device));
    if (methods.linear != "lasp") break;
  }
  return out;
}

}  // namespace

const StrategyEntry& data_parallel_entry() {
  static const StrategyEntry entry{
      .names = {"dp"},
      .alone = dp_candidates,
      .make = make,
      .shardable = true,
      .under_auto = dp_candidates,
      .plan = plan};
  return entry;
}

const StrategyEntry& sequence_parallel_entry() {
  static const StrategyEntry entry{
      .names = {"sp", "lasp"},
      .alone = sp_alone,
      .make = make,
      .shardable = true,
      .under_auto = sp_under_auto,
      .plan = plan};
  return entry;
}

}  // namespace trident
