#include "report/table.h"

namespace tessera::report {

std::string LabelText(const LabelValue& v) {
  return std::holds_alternative<std::string>(v) ? std::get<std::string>(v)
                                                : std::to_string(std::get<int64_t>(v));
}

nlohmann::json LabelJson(const LabelValue& v) {
  return std::holds_alternative<std::string>(v) ? nlohmann::json(std::get<std::string>(v))
                                                : nlohmann::json(std::get<int64_t>(v));
}

}  // namespace tessera::report
