#include "predict/config_key.h"

#include <fmt/core.h>

namespace tessera::predict {

std::string ConfigKey(std::string_view gpu_model, std::string_view profile, int mps_percent) {
  return fmt::format("{}/{}/{}", gpu_model, profile, mps_percent);
}

}  // namespace tessera::predict
