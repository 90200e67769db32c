// The scheduler's status page: its HTML for a hand-made view (every pod, its SLO class, the
// pending queue, the recent actions, escaping, no script and no external asset), and the same
// page rendered by a real browser, Debian's headless Chromium, to a screenshot and a DOM.
// TESSERA_UPDATE_SCREENSHOTS=1 also copies the screenshot to docs/img/status-page.png.
#include "k8s/status_page.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace tessera::k8s {
namespace {

namespace fs = std::filesystem;
using Slo = StatusPod::Slo;

constexpr double kNow = 1714557600;  // 2024-05-01T10:00:00Z

size_t Occurrences(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string_view::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

StatusPod Pod(std::string name, std::string slice, std::optional<double> slo,
              std::optional<double> predicted, std::optional<double> observed, Slo state,
              std::string note = "") {
  return StatusPod{std::move(name), std::move(slice), slo,  predicted,
                   observed,        std::move(note),  state};
}

// An A100 node (GPU 0 split by MIG into 3g+2g+1g+1g, GPU 1 held out after a failed reshape) and
// a V100 node with MIG off (GPU 0 shared by MPS, GPU 1 given whole to a training pod).
StatusNode A100Node() {
  StatusGpu mig{0, "GPU-5e7f0c1a-a100-0", "A100-SXM4-40GB", "3g.20gb+2g.10gb+1g.5gb+1g.5gb", true,
                {}};
  mig.partitions = {
      {"MIG 3g.20gb",
       1000,
       {Pod("inference/bert-large-0", "MIG 3g.20gb", 120, 151.24, 143.66, Slo::kMet)}},
      {"MIG 2g.10gb",
       1000,
       {Pod("inference/resnet50-1", "MIG 2g.10gb", 200, 209.5, 174.3, Slo::kMissed)}},
      {"MIG 1g.5gb",
       1000,
       {Pod("batch/whisper-tiny-2", "MIG 1g.5gb", std::nullopt, 38.0, std::nullopt, Slo::kUnknown,
            "no series")}},
      {"MIG 1g.5gb", 0, {}},
  };
  StatusGpu held{
      1, "GPU-5e7f0c1a-a100-1", "A100-SXM4-40GB", "4g.20gb+3g.20gb", false, "MIG reshape failed",
      {}};
  return {"gpu-a100-0", true, {mig, held}};
}

StatusNode V100Node() {
  StatusGpu mps{0, "GPU-9c2d44b0-v100-0", "V100-SXM2-16GB", "", true, {}};
  mps.partitions = {
      {"MPS",
       600,
       {Pod("inference/gpt2-small-0", "MPS 30 %", 60, 72.0, 68.04, Slo::kMet),
        Pod("inference/distilbert-3", "MPS 30 %", 90, 95.1, std::nullopt, Slo::kMet, "stale")}}};
  StatusGpu whole{1, "GPU-9c2d44b0-v100-1", "V100-SXM2-16GB", "", true, {}};
  whole.partitions = {{"whole GPU",
                       1000,
                       {Pod("training/llama-ft-0", "whole GPU", std::nullopt, std::nullopt,
                            std::nullopt, Slo::kUnknown, "no series")}}};
  return {"gpu-v100-1", true, {mps, whole}, {"dedicated=training:NoSchedule"}};
}

StatusView View() {
  StatusView v;
  v.scheduler = "tessera";
  v.identity = "tessera-scheduler-7d9f-x2k4";
  v.role = "leader (lease tessera-system/tessera, renewed 2 s ago)";
  v.policy = "predictive";
  v.generated_at = kNow;
  v.nodes = {A100Node(), V100Node()};
  v.pending = {{"inference/llama-7b-0",
                "0/2 nodes are available: no MIG 3g.20gb free on gpu-a100-0 (GPU 1 held out), "
                "gpu-v100-1: predicted 31.0 < SLO 50.0 QPS",
                42.4}};
  v.recent = {{kNow - 12, "inference/resnet50-1", "moved",
               "SLO missed: observed 174.3 < 200.0 QPS; MIG 3g.20gb frees at 10:00:30"},
              {kNow - 95.5, "batch/etl-7", "evicted",
               "preempted by inference/bert-large-0 (priority 1000 > 0)"}};
  v.counters = {{"bound", 17}, {"evictions", 1}, {"moves", 1}, {"reshapes", 2}};
  return v;
}

TEST(StatusPage, HeaderNamesTheSchedulerReplicaRolePolicyAndUtcTime) {
  const std::string html = StatusHtml(View());
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find("tessera-scheduler-7d9f-x2k4"), std::string::npos);
  EXPECT_NE(html.find("class=\"badge leader\" id=\"role\">leader (lease"), std::string::npos);
  EXPECT_NE(html.find("reloads every 5 s"), std::string::npos);
  EXPECT_NE(html.find("<b id=\"policy\">predictive</b>"), std::string::npos);
  EXPECT_NE(html.find("<time id=\"generated\">2024-05-01T10:00:00Z</time>"), std::string::npos);
}

TEST(StatusPage, EveryPodHasARowClassedByItsSlo) {
  const std::string html = StatusHtml(View());
  for (const char* pod :
       {"inference/bert-large-0", "inference/resnet50-1", "batch/whisper-tiny-2",
        "inference/gpt2-small-0", "inference/distilbert-3", "training/llama-ft-0"}) {
    EXPECT_NE(html.find(std::string("<td>") + pod + "</td>"), std::string::npos) << pod;
  }
  EXPECT_EQ(Occurrences(html, "<tr class=\"pod "), 6u);
  EXPECT_EQ(Occurrences(html, "<tr class=\"pod met\""), 3u);
  EXPECT_EQ(Occurrences(html, "<tr class=\"pod missed\""), 1u);
  EXPECT_EQ(Occurrences(html, "<tr class=\"pod unknown\""), 2u);
  EXPECT_NE(html.find("<tr class=\"pod missed\" id=\"pod-inference-resnet50-1\">"),
            std::string::npos);
}

TEST(StatusPage, QpsWithOneDecimalAndTheNoteWhenNotObserved) {
  const std::string html = StatusHtml(View());
  // bert: SLO 120, predicted 151.24 → 151.2, observed 143.66 → 143.7.
  EXPECT_NE(html.find("<td class=\"num\">≥ 120.0</td><td class=\"num\">151.2</td>"
                      "<td class=\"num observed\">143.7</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"num observed\">68.0</td>"), std::string::npos);  // 68.04
  EXPECT_NE(html.find("<td class=\"num observed\"><span class=\"note\">stale</span>"),
            std::string::npos);
  // whisper: no SLO, no observation → best effort and its note.
  EXPECT_NE(html.find("<td class=\"num\">best effort</td><td class=\"num\">38.0</td>"
                      "<td class=\"num observed\"><span class=\"note\">no series</span>"),
            std::string::npos);
  // llama-ft: nothing predicted either.
  EXPECT_NE(html.find("<td class=\"num\">best effort</td><td class=\"num\">—</td>"),
            std::string::npos);
}

TEST(StatusPage, GpusShowModelUuidMigLayoutAndHeldOut) {
  const std::string html = StatusHtml(View());
  EXPECT_NE(html.find("id=\"nodes\""), std::string::npos);
  EXPECT_NE(html.find("id=\"node-gpu-a100-0\""), std::string::npos);
  EXPECT_NE(html.find("id=\"node-gpu-v100-1\""), std::string::npos);
  EXPECT_NE(html.find("MIG 3g.20gb+2g.10gb+1g.5gb+1g.5gb"), std::string::npos);
  EXPECT_NE(html.find("GPU-5e7f0c1a-a100-0"), std::string::npos);
  EXPECT_EQ(Occurrences(html, "MIG off"), 2u);  // both V100s
  // Only the A100's GPU 1 is held out, and it says so.
  EXPECT_EQ(Occurrences(html, "held out / unavailable"), 1u);
  EXPECT_NE(html.find("held out / unavailable: MIG reshape failed</span>"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"gpu off\" id=\"node-gpu-a100-0-gpu-1\">"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"gpu\" id=\"node-gpu-a100-0-gpu-0\">"), std::string::npos);
  EXPECT_NE(html.find("2 nodes · 4 GPUs · 6 pods"), std::string::npos);
  // The V100 node's taint, beside its name; the A100 node has none.
  EXPECT_EQ(Occurrences(html, "class=\"badge taint\""), 1u);
  EXPECT_NE(html.find("<span class=\"badge taint\" title=\"taint\">dedicated=training:NoSchedule"
                      "</span></h3>"),
            std::string::npos);
}

TEST(StatusPage, PartitionBarsFollowUsedMilli) {
  const std::string html = StatusHtml(View());
  // The MPS partition holds 600 ‰: 60 % of the 140 px bar is 84 px.
  EXPECT_NE(html.find("<rect width=\"84.0\" height=\"10\""), std::string::npos);
  EXPECT_NE(html.find("<span class=\"used\">60.0 %</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"used\">0.0 %</span>"), std::string::npos);
  EXPECT_NE(html.find("<td colspan=\"5\" class=\"empty\">no pods</td>"), std::string::npos);
  StatusView over = View();
  over.nodes[1].gpus[0].partitions[0].used_milli = 1250;  // clamped bar, true number
  const std::string over_html = StatusHtml(over);
  EXPECT_NE(over_html.find("<span class=\"used\">125.0 %</span>"), std::string::npos);
  EXPECT_EQ(over_html.find("<rect width=\"175.0\""), std::string::npos);
}

TEST(StatusPage, PendingAndRecentSections) {
  const std::string html = StatusHtml(View());
  const size_t pending = html.find("<section id=\"pending\">");
  const size_t recent = html.find("<section id=\"recent\">");
  ASSERT_NE(pending, std::string::npos);
  ASSERT_NE(recent, std::string::npos);
  EXPECT_NE(html.find("<tr class=\"pending\" id=\"pending-inference-llama-7b-0\">"
                      "<td>inference/llama-7b-0</td><td class=\"num\">42 s</td>"
                      "<td>0/2 nodes are available: no MIG 3g.20gb free",
                      pending),
            std::string::npos);
  // Newest first, times in UTC: 12 s and 95.5 s before 10:00:00.
  const size_t moved = html.find(
      "<time>2024-05-01T09:59:48Z</time></td><td>inference/resnet50-1"
      "</td><td><b>moved</b></td>",
      recent);
  const size_t evicted = html.find(
      "<time>2024-05-01T09:58:24Z</time></td><td>batch/etl-7</td>"
      "<td><b>evicted</b></td><td>preempted by",
      recent);
  ASSERT_NE(moved, std::string::npos);
  ASSERT_NE(evicted, std::string::npos);
  EXPECT_LT(moved, evicted);
  EXPECT_EQ(html.find("no pending pods"), std::string::npos);
  EXPECT_EQ(html.find("no moves or evictions yet"), std::string::npos);
}

TEST(StatusPage, CountersInMapOrder) {
  const std::string html = StatusHtml(View());
  const size_t bound = html.find("<tr id=\"counter-bound\"><td>bound</td><td class=\"num\">17");
  const size_t reshapes =
      html.find("<tr id=\"counter-reshapes\"><td>reshapes</td><td class=\"num\">2");
  ASSERT_NE(bound, std::string::npos);
  ASSERT_NE(reshapes, std::string::npos);
  EXPECT_LT(bound, reshapes);
}

TEST(StatusPage, EmptyStatesSaySo) {
  StatusView v;
  v.scheduler = "tessera";
  v.role = "standby (leader is tessera-scheduler-0)";
  const std::string html = StatusHtml(v);
  EXPECT_NE(html.find("no pending pods"), std::string::npos);
  EXPECT_NE(html.find("no moves or evictions yet"), std::string::npos);
  EXPECT_NE(html.find("no nodes"), std::string::npos);
  EXPECT_NE(html.find("no counters yet"), std::string::npos);
  EXPECT_NE(html.find("class=\"badge standby\""), std::string::npos);
  EXPECT_EQ(html.find("class=\"pod "), std::string::npos);
}

TEST(StatusPage, EveryUserTextIsEscaped) {
  StatusView v = View();
  v.scheduler = "a&b";
  v.nodes[0].name = "n<1>";
  v.nodes[0].gpus[0].partitions[0].pods[0].name = "evil/<script>alert(\"x\")</script>";
  v.nodes[0].gpus[0].partitions[0].pods[0].slice = "<b>slice</b>";
  v.pending[0].reason = "<img src=x onerror=alert(1)>";
  v.recent[0].action = "<i>moved</i>";
  v.counters["<c>"] = 3;
  const std::string html = StatusHtml(v);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<b>slice"), std::string::npos);
  EXPECT_EQ(html.find("<i>moved"), std::string::npos);
  EXPECT_NE(html.find("<td>evil/&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td>"),
            std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(html.find("<title>Tessera · a&amp;b · status</title>"), std::string::npos);
  EXPECT_NE(html.find("id=\"node-n-1-\"><h3>n&lt;1&gt; "), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;c&gt;</td>"), std::string::npos);
}

TEST(StatusPage, SelfContainedWithoutScriptOrExternalAsset) {
  const std::string html = StatusHtml(View());
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(Occurrences(html, "<svg "), 6u);  // one bar per partition
  EXPECT_NE(html.find("<style>"), std::string::npos);
}

TEST(StatusPage, RefreshMetaOnlyWhenAsked) {
  const StatusView v = View();
  EXPECT_NE(StatusHtml(v).find("<meta http-equiv=\"refresh\" content=\"5\">"), std::string::npos);
  EXPECT_NE(StatusHtml(v, 30).find("<meta http-equiv=\"refresh\" content=\"30\">"),
            std::string::npos);
  // Browsers read whole seconds; a fraction rounds, and never down to 0 (a reload loop).
  EXPECT_NE(StatusHtml(v, 2.6).find("content=\"3\""), std::string::npos);
  EXPECT_NE(StatusHtml(v, 0.2).find("content=\"1\""), std::string::npos);
  EXPECT_EQ(StatusHtml(v, 0).find("http-equiv=\"refresh\""), std::string::npos);
  EXPECT_EQ(StatusHtml(v, 0).find("reloads every"), std::string::npos);
  EXPECT_EQ(StatusHtml(v, -1).find("http-equiv=\"refresh\""), std::string::npos);
}

// --- the page in a real browser ----------------------------------------------------------------

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs a shell command, returns its stdout and sets *rc to its exit status.
std::string Capture(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return out;
  }
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  *rc = pclose(p);
  return out;
}

uint32_t BigEndian32(std::string_view b, size_t at) {
  return (uint32_t{static_cast<unsigned char>(b[at])} << 24) |
         (uint32_t{static_cast<unsigned char>(b[at + 1])} << 16) |
         (uint32_t{static_cast<unsigned char>(b[at + 2])} << 8) |
         uint32_t{static_cast<unsigned char>(b[at + 3])};
}

class StatusPageBrowser : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(std::system("command -v chromium >/dev/null 2>&1"), 0)
        << "chromium is not installed: run scripts/deps.sh (Debian package `chromium`)";
    std::string tmpl = (fs::temp_directory_path() / "tessera-status-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ / "status.html") << StatusHtml(View(), 0);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Chromium is a separate, uninstrumented binary: the sanitizers' settings of this test
  // binary are not its business. A throwaway profile; a timeout so a hung browser fails.
  std::string Chromium(const std::string& flags) const {
    return "env -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS -u LD_PRELOAD timeout 60 "
           "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
           "--user-data-dir='" +
           (dir_ / "profile").string() + "' --window-size=1280,1000 " + flags + " 'file://" +
           (dir_ / "status.html").string() + "'";
  }

  fs::path dir_;
};

TEST_F(StatusPageBrowser, ScreenshotIsA1280PixelWidePng) {
  const fs::path png = dir_ / "status.png";
  const int rc =
      std::system((Chromium("--screenshot='" + png.string() + "'") + " >/dev/null 2>&1").c_str());
  ASSERT_TRUE(fs::exists(png)) << "chromium wrote no screenshot (exit status " << rc << ")";
  const std::string bytes = ReadFile(png);
  ASSERT_GE(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(bytes.substr(12, 4), "IHDR");
  EXPECT_EQ(BigEndian32(bytes, 16), 1280u);
  EXPECT_EQ(BigEndian32(bytes, 20), 1000u);
  // A blank 1280×1000 page compresses to a few KB; tables, bars and text make far more.
  EXPECT_GT(bytes.size(), 40u * 1024) << "the screenshot looks empty";
  if (const char* update = std::getenv("TESSERA_UPDATE_SCREENSHOTS");
      update != nullptr && std::string_view(update) == "1") {
    const fs::path doc = fs::path(TESSERA_SOURCE_DIR) / "docs/img/status-page.png";
    fs::create_directories(doc.parent_path());
    fs::copy_file(png, doc, fs::copy_options::overwrite_existing);
  }
}

TEST_F(StatusPageBrowser, DomHasThePodRowsPendingAndRecent) {
  int rc = 0;
  const std::string dom = Capture(Chromium("--dump-dom") + " 2>/dev/null", &rc);
  ASSERT_EQ(rc, 0) << "chromium --dump-dom failed";
  // The browser parsed the page into the same structure: every pod row with its class, the
  // sections by id, the escaped texts as text (no element sneaked in).
  EXPECT_EQ(Occurrences(dom, "<tr class=\"pod met\""), 3u);
  EXPECT_EQ(Occurrences(dom, "<tr class=\"pod missed\""), 1u);
  EXPECT_EQ(Occurrences(dom, "<tr class=\"pod unknown\""), 2u);
  EXPECT_NE(dom.find("<td>inference/resnet50-1</td>"), std::string::npos);
  EXPECT_NE(dom.find("<section id=\"pending\">"), std::string::npos);
  EXPECT_NE(dom.find("<td>inference/llama-7b-0</td>"), std::string::npos);
  EXPECT_NE(dom.find("<section id=\"recent\">"), std::string::npos);
  EXPECT_NE(dom.find("<b>evicted</b>"), std::string::npos);
  EXPECT_NE(dom.find("id=\"nodes\""), std::string::npos);
  EXPECT_EQ(dom.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace tessera::k8s
