#pragma once
// Roofline prior: the shape of an inference engine's row across the slices of one GPU. A batch
// either keeps the slice's compute busy, and then runs as fast as the slice is big, or it waits on
// the host (launch, copy, framework overhead), and then a bigger slice does not help. In logs, per
// application a and GPU model:
//     x(a, c) = b_a + min(kappa_a, l_c)
// l_c is the log compute share of column c (config_key.h: MIG slices × MPS %); kappa_a is the
// knee, where the host's ceiling meets the compute rate, and b_a the level. The MIGProfiler rows
// show it (docs/prediction.md): bert-base at batch 1 is flat across 1g–7g, at batch 128 it grows
// 7.5× from 1g to 7g, and between them the knee moves with the tokens per batch.
//
// Fit, per GPU model: a row with cells on two or more shares gets the knees whose squared error
// is within `slack`² per cell of its best (an interval, open where it reaches the grid's end:
// the flat and the linear rows only bound their knee); a censored ridge regression on the encoded
// features (features.h; intercept unpenalised, lambda of `ridge` by leave-one-out; each row's
// target the point of its interval nearest the last fit, from the midpoints, until it settles)
// predicts a knee for every row, clamped into the row's own interval where it has one. The level is
// then the mean over the row's cells on that GPU of x - min(kappa, l). One measured cell and the
// features give a row's whole shape on that GPU.
//
// Output: the prediction for every cell whose column has a share and whose row has a measured
// cell on that column's GPU model; NaN elsewhere (another method must fill those). Pure function.

#include <Eigen/Dense>
#include <vector>

#include "predict/features.h"

namespace tessera::predict {

struct RooflineOptions {
  int grid = 61;        // knees tried per GPU model, evenly over [min l - log 2, max l + log 2]
  double slack = 0.02;  // RMS log error within which two knees fit a row equally well
  std::vector<double> ridge = {0.01, 0.1, 1.0, 10.0};
  int min_rows = 3;          // fewer rows with an interval: every row gets their mean knee
  int censored_rounds = 20;  // refits of the censored regression, at most
};

// `observed`: log values, NaN where unknown. `features.columns` must have one share per column
// (empty: the result is all NaN).
Eigen::MatrixXd RooflineComplete(const Eigen::MatrixXd& observed, const EncodedFeatures& features,
                                 const RooflineOptions& options = {});

}  // namespace tessera::predict
