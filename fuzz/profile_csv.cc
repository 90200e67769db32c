// The predictor's CSVs (predict/matrix.h, interference.h): the profile matrix the daemons'
// --profile reads and the interference rows of --interference; one input is tried as both.
#include "fuzz.h"
#include "predict/interference.h"
#include "predict/matrix.h"

void tessera::fuzz::FuzzOne(const std::string& path, std::string_view) {
  (void)predict::ProfileMatrix::LoadCsv(path);
  (void)predict::InterferenceMatrices::LoadCsv(path);
}
