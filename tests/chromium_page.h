#pragma once
// A report page as Debian's headless Chromium parses and draws it, for the tests that check
// what people look at (the plan page, the cluster box's comparison). Test-only, header-only.
//
// RenderPage loads `html` (a file) and returns its DOM after Chromium parsed it, and writes a
// screenshot to `png`; the sanitizers' variables are dropped for the browser, which is not
// built with them. Chromium missing, or a DOM not dumped, fails the calling test.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tessera::testing {

inline std::string ReadWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct RenderedPage {
  std::string dom;
  bool screenshot = false;  // `png` holds a PNG
};

inline RenderedPage RenderPage(const std::filesystem::path& html,
                               const std::filesystem::path& png) {
  RenderedPage out;
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) {
    ADD_FAILURE() << "chromium is not installed: run scripts/deps.sh (Debian package `chromium`)";
    return out;
  }
  const std::filesystem::path dir = html.parent_path();
  const std::string chromium =
      "env -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS -u LD_PRELOAD timeout 60 chromium "
      "--headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir='" +
      (dir / "profile").string() + "' --window-size=1280,900 ";
  const std::string page = " 'file://" + html.string() + "'";
  const std::filesystem::path dom = dir / "dom.html";
  if (std::system(
          (chromium + "--dump-dom" + page + " >'" + dom.string() + "' 2>/dev/null").c_str()) != 0) {
    ADD_FAILURE() << "chromium --dump-dom failed on " << html;
    return out;
  }
  out.dom = ReadWholeFile(dom);
  std::system(
      (chromium + "--screenshot='" + png.string() + "'" + page + " >/dev/null 2>&1").c_str());
  const std::string bytes = ReadWholeFile(png);
  out.screenshot = bytes.size() >= 8 && bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8);
  return out;
}

}  // namespace tessera::testing
