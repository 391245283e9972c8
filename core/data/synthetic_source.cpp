#include "core/data/synthetic_source.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "kernels/common/error.h"
#include "core/data/rng.h"

namespace trident {

namespace {

// Independent random streams drawn from one seed.
enum SyntheticStream : uint64_t { kLength = 1, kChain = 2, kWalk = 3 };

// The walk restarts from a uniformly random id at every multiple of this position, so reading a range replays at
// most this many tokens before it instead of the whole document (and costs the model one unpredictable token in 256).
constexpr int64_t kRestartEvery = 256;

class SyntheticSource final : public DocumentSource {
 public:
  SyntheticSource(const LengthPreset& preset, int64_t num_documents, int64_t max_length, int64_t vocab_size,
                  uint64_t seed, double length_scale)
      : preset_(preset),
        num_documents_(num_documents),
        max_length_(max_length),
        vocab_size_(static_cast<uint64_t>(vocab_size)),
        seed_(seed),
        length_scale_(length_scale) {}

  int64_t num_documents() const override { return num_documents_; }

  int64_t document_length(int64_t doc) const override {
    TRIDENT_CHECK(doc >= 0 && doc < num_documents_, "document {} of {}", doc, num_documents_);
    const bool first = unit_interval(hash_of(seed_, kLength, doc, 0)) < preset_.mixture[0].weight;
    const LengthComponent& c = preset_.mixture[first ? 0 : 1];  // the second component has the remaining weight
    // Box-Muller; 1 - u lies in (0, 1], so the logarithm is finite.
    const double u1 = unit_interval(hash_of(seed_, kLength, doc, 1));
    const double u2 = unit_interval(hash_of(seed_, kLength, doc, 2));
    const double z = std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2);
    const double length =
        std::min(length_scale_ * std::exp(c.mu + c.sigma * z), static_cast<double>(max_length_));
    return std::max<int64_t>(1, std::llround(length));
  }

  std::string describe() const override {
    return fmt::format("synthetic {}-like corpus ({} documents, seed {}{})", preset_.name, num_documents_, seed_,
                       length_scale_ == 1 ? "" : fmt::format(", lengths x {:.4g}", length_scale_));
  }

 private:
  int32_t successor(int32_t id, uint64_t h) const {
    static constexpr int kBranch[8] = {0, 0, 0, 0, 1, 1, 2, 3};  // probabilities 1/2, 1/4, 1/8, 1/8
    return static_cast<int32_t>(hash_of(seed_, kChain, id, kBranch[h & 7]) % vocab_size_);
  }

  void read_tokens(int64_t doc, int64_t start, std::span<int32_t> out) const override {
    const int64_t end = start + static_cast<int64_t>(out.size());
    int32_t id = 0;
    for (int64_t p = start - start % kRestartEvery; p < end; ++p) {
      const uint64_t h = hash_of(seed_, kWalk, doc, p);
      id = p % kRestartEvery == 0 ? static_cast<int32_t>(h % vocab_size_) : successor(id, h);
      if (p >= start) out[p - start] = id;
    }
  }

  LengthPreset preset_;
  int64_t num_documents_;
  int64_t max_length_;
  uint64_t vocab_size_;
  uint64_t seed_;
  double length_scale_;
};

}  // namespace

const LengthPreset& length_preset(std::string_view name) {
  for (const LengthPreset& preset : kLengthPresets)
    if (preset.name == name) return preset;
  throw_config_error("data.preset: unknown preset '{}' (allowed: wikipedia, commoncrawl, github)", name);
}

std::unique_ptr<DocumentSource> make_synthetic_documents(const LengthPreset& preset, int64_t num_documents,
                                                         int64_t max_length, int64_t vocab_size, uint64_t seed,
                                                         double length_scale) {
  return std::make_unique<SyntheticSource>(preset, num_documents, max_length, vocab_size, seed, length_scale);
}

}  // namespace trident
