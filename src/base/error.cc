#include "base/error.h"

#include <cstdio>
#include <cstdlib>

namespace tessera {

std::unexpected<Error> FailAt(const std::string& file, int line, const std::string& message) {
  return std::unexpected(Error{fmt::format("{}:{}: {}", file, line, message)});
}

void Die(const std::string& message) {
  std::fprintf(stderr, "tessera: fatal: %s\n", message.c_str());
  std::abort();
}

}  // namespace tessera
