#include "predict/predictor_cache.h"

#include <utility>

namespace tessera::predict {

Expected<Predictor> PredictorCache::Create(ProfileMatrix profile, InterferenceMatrices interference,
                                           PredictorOptions options, FeatureTable features) {
  for (const Entry& e : entries_) {
    if (e.profile == profile && e.interference == interference && e.options == options &&
        e.features == features) {
      ++hits_;
      return e.predictor;
    }
  }
  ++misses_;
  Expected<Predictor> made = Predictor::Create(profile, interference, options, features);
  if (!made || capacity_ == 0) return made;
  if (entries_.size() >= capacity_) entries_.pop_front();
  entries_.push_back({std::move(profile), std::move(interference), std::move(options),
                      std::move(features), *made});
  return made;
}

}  // namespace tessera::predict
