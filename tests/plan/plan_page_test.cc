// The plan's page as Chromium (Debian's, headless) parses and draws it.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chromium_page.h"
#include "plan/planner.h"
#include "report/html.h"
#include "sim/embedded_apps.h"

namespace tessera::plan {
namespace {

namespace fs = std::filesystem;

TEST(PlanPage, ChromiumRendersTheThesisPlan) {
  auto catalog = sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml");
  ASSERT_TRUE(catalog);
  auto ex = BuiltInExample("thesis-slo4", *catalog);
  ASSERT_TRUE(ex);
  auto run = RunPlanner(std::move(ex->input), ex->catalog);
  ASSERT_TRUE(run) << run.error().message;
  const fs::path dir =
      fs::temp_directory_path() / ("tessera-plan-page-" + std::to_string(getpid()));
  ASSERT_TRUE(report::WriteFiles(dir.string(), {{"plan.html", PlanHtml(*run)}}));
  const testing::RenderedPage rendered = testing::RenderPage(dir / "plan.html", dir / "plan.png");
  const std::string& dom = rendered.dom;
  // Three A30s cut into four 1g.6gb each against eight whole GPUs: 8 / 3 = 2.67× less; the six
  // engines each on two instances, all 24 hours met on the twin.
  EXPECT_NE(dom.find("<b>Shared plan (exact): 3 GPUs (A30-24GB: 3)</b>"), std::string::npos)
      << dom.substr(0, 3000);
  EXPECT_NE(dom.find("<b>2.67× less</b>"), std::string::npos);
  // Its SLO is the thesis's SLO_4 of the engine (the input's, printed with two decimals).
  EXPECT_NE(dom.find(fmt::format("<td>onnx/resnet50</td><td>onnx/resnet50</td><td>{:.2f}</td>"
                                 "<td>2</td><td>2 × A30-24GB 1g.6gb</td>",
                                 run->input.services[0].slo_qps)),
            std::string::npos);
  size_t rows = 0;
  for (size_t at = dom.find("<td>24 / 24</td>"); at != std::string::npos;
       at = dom.find("<td>24 / 24</td>", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 6u);
  EXPECT_NE(dom.find("MIG 1g.6gb@0,1g.6gb@1,1g.6gb@2,1g.6gb@3"), std::string::npos);
  EXPECT_EQ(dom.find("<script"), std::string::npos);
  EXPECT_TRUE(rendered.screenshot) << "chromium wrote no screenshot";
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace tessera::plan
