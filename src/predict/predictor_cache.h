#pragma once
// PredictorCache: Predictor::Create remembered by its inputs, for an experiment whose runs
// complete the same samples again and again (the thesis sweep profiles the same GPU models with
// the same seed for every policy and for every scenario that profiles all its engines). The first
// Create of an input set is kept; every later one with equal inputs (bit for bit: matrices,
// features, options) gets a copy of it. Create is deterministic in its inputs and a copy starts in
// the state Create left, so each run sees exactly the predictor it would have built itself.
//
// Holds at most `capacity` input sets, dropping the oldest. Not thread-safe.

#include <cstddef>
#include <deque>

#include "base/error.h"
#include "predict/features.h"
#include "predict/interference.h"
#include "predict/matrix.h"
#include "predict/predictor.h"

namespace tessera::predict {

class PredictorCache {
 public:
  explicit PredictorCache(size_t capacity = 64) : capacity_(capacity) {}

  // Predictor::Create(profile, interference, options, features), or a copy of the one made from
  // equal inputs before. A failed Create is not kept.
  [[nodiscard]] Expected<Predictor> Create(ProfileMatrix profile,
                                           InterferenceMatrices interference = {},
                                           PredictorOptions options = {},
                                           FeatureTable features = {});

  int hits() const { return hits_; }
  int misses() const { return misses_; }

 private:
  struct Entry {
    ProfileMatrix profile;
    InterferenceMatrices interference;
    PredictorOptions options;
    FeatureTable features;
    Predictor predictor;
  };
  size_t capacity_;
  std::deque<Entry> entries_;
  int hits_ = 0, misses_ = 0;
};

}  // namespace tessera::predict
