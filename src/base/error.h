#pragma once
// Error and Expected<T>: how every fallible Tessera function reports failure.
//
// An Error is something broken (a malformed file, an unreachable server, an invalid request);
// scheduling outcomes such as "does not fit" are values, not Errors (STYLE.md). The message
// names what failed: a file and line, an endpoint, or an object. No exception crosses a module
// boundary: code that calls a throwing library catches at its own edge and returns an Error.

#include <fmt/core.h>

#include <expected>
#include <string>
#include <utility>

namespace tessera {

struct Error {
  std::string message;
};

template <typename T>
using Expected = std::expected<T, Error>;

// Fail("...{}...", args) builds the unexpected value of any Expected<T>.
template <typename... Args>
[[nodiscard]] std::unexpected<Error> Fail(fmt::format_string<Args...> format, Args&&... args) {
  return std::unexpected(Error{fmt::format(format, std::forward<Args>(args)...)});
}

// "file:line: message" — the form every data-file error takes.
[[nodiscard]] std::unexpected<Error> FailAt(const std::string& file, int line,
                                            const std::string& message);

// Aborts with a message when a broken invariant shows a bug (never for bad input).
[[noreturn]] void Die(const std::string& message);

#define TESSERA_CHECK(cond)                                                   \
  do {                                                                        \
    if (!(cond))                                                              \
      ::tessera::Die(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                     ": check failed: " #cond);                               \
  } while (0)

}  // namespace tessera
