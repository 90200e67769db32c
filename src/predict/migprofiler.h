#pragma once
// Builds the profile matrix from the MIGProfiler measurements (shared/data/migprofiler, see its
// SOURCE.md): single-tenant inference throughput of NLP and CV models in every MIG instance size
// of an A100-40GB and an A100-80GB.
//
// Keys: application = `<model_name>/bs<batch>` plus `/seq<tokens>` for NLP models
// (`bert-base-multilingual-cased/bs32/seq64`, `resnet50/bs8`); configuration =
// `<GPU model>/<MIG profile>/100` (`A100-40GB/1g.5gb/100`, `A100-80GB/7g.80gb/100`): one model
// alone in one MIG instance, MPS not in use (100%). Value = `throughput` column (samples/s).
//
// Which files are read, so that every benchmark run is counted once (docs/prediction.md):
//   - A100-40g/infer_bsz/<m>/<m>_bsz.csv and A100-40g/infer_seq/<m>/<m>_seq.csv, the combined
//     tables (the *_infer_XXg_* and *_MIG_profile_N files hold the same runs split by instance;
//     mocel_compare/ holds copies);
//   - A100-80g/infer/nlp/integrated_result_bsz.csv, integrated_result_seq.csv and
//     A100-80g/infer/cv/integrated_result.csv (nlp_infer*.csv / cv_infer.csv are the same runs
//     without the DCGM columns).
// A run is identified by (application, configuration, start_timestamp): the same run listed in
// two tables (the batch-32/seq-64 point sits in both the batch and the sequence sweep) is folded
// once; two distinct runs of one cell are averaged (count 2).
//
// All or nothing: the first malformed row yields one Error "file:line: why" and no matrix.

#include <map>
#include <string>

#include "base/error.h"
#include "predict/features.h"
#include "predict/matrix.h"

namespace tessera::predict {

struct MigProfilerStats {
  int files = 0;           // tables read
  int rows = 0;            // data rows seen
  int duplicate_runs = 0;  // rows skipped as a run already counted
};

// What the tables say besides throughput.
struct MigProfilerExtras {
  MigProfilerStats stats;
  // Per application the smallest `fb_used_mean` (MiB) among its runs: it demonstrably ran in
  // that much (frameworks take more on bigger instances).
  std::map<std::string, double> min_memory_mib;
  // Per application what it declares (features.h): `model` (model_name), `task` (`nlp` when the
  // table has seq_length, else `cv`), `batch`, `seq` and `tokens` (batch × seq, the tokens a
  // batch carries; NLP only) and `params` (total_params, in the A100-40GB tables only).
  FeatureTable features;
};

[[nodiscard]] Expected<ProfileMatrix> LoadMigProfiler(const std::string& dir,
                                                      MigProfilerExtras* extras = nullptr);

}  // namespace tessera::predict
