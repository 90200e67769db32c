#pragma once
// A fuzz target: one parser of outside input, fed every byte string the driver (driver.cc)
// makes. The input also lies in the file `path`, for parsers that read files. A target must
// return normally for any input (an Error is a normal outcome); a crash, a sanitizer report, an
// uncaught exception or a hang is a finding. Targets are built three ways (fuzz/CMakeLists.txt):
// plainly, under ASan/UBSan for the test command's smoke runs, and with AFL++'s instrumentation
// by scripts/fuzz.sh.
#include <string>
#include <string_view>

namespace tessera::fuzz {

void FuzzOne(const std::string& path, std::string_view data);

}  // namespace tessera::fuzz
