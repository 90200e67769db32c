#pragma once
// A predictor over a small, fully measured profile matrix — each listed cell run once — with
// "baseline" completion: for tests whose expected numbers are the cells themselves.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "predict/predictor.h"

namespace tessera::testing_predict {

struct MeasuredCell {
  std::string app;
  std::string config;  // predict::ConfigKey form, "A100-40GB/whole/100"
  double qps = 0;
};

inline predict::Predictor MeasuredPredictor(const std::vector<MeasuredCell>& cells,
                                            int refit_every = 1) {
  predict::ProfileMatrix profile;
  for (const MeasuredCell& c : cells) {
    profile.Observe(profile.AddRow(c.app), profile.AddCol(c.config), c.qps);
  }
  predict::PredictorOptions o;
  o.method = "baseline";
  o.refit_every = refit_every;
  auto p = predict::Predictor::Create(profile, {}, o);
  EXPECT_TRUE(p.has_value()) << p.error().message;
  return std::move(*p);
}

}  // namespace tessera::testing_predict
