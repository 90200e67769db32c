// metrics_file_exporter: the integration harness's stand-in for the exporters a cluster runs
// (NVIDIA Triton's /metrics, dcgm-exporter): serves, on GET /metrics, the concatenation of the
// *.prom files in --dir, read afresh on every scrape — the textfile-collector convention of
// Prometheus's node_exporter. Tests write their own file there (their own label values, so
// tests running in parallel do not meet) and a real Prometheus scrapes it (scripts/harness.sh).
//
//   metrics_file_exporter --dir DIR --port PORT
#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::string dir;
  int port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir") dir = argv[i + 1];
    if (flag == "--port") port = std::atoi(argv[i + 1]);
  }
  if (dir.empty() || port <= 0) {
    std::fprintf(stderr, "usage: metrics_file_exporter --dir DIR --port PORT\n");
    return 2;
  }
  httplib::Server server;
  server.Get("/metrics", [&dir](const httplib::Request&, httplib::Response& res) {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".prom") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    std::string body;
    for (const auto& f : files) {
      std::ifstream in(f);
      std::stringstream text;
      text << in.rdbuf();
      body += text.str();
      if (!body.empty() && body.back() != '\n') body += '\n';
    }
    res.set_content(body, "text/plain; version=0.0.4");
  });
  server.Get("/ready", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  if (!server.listen("127.0.0.1", port)) {
    std::fprintf(stderr, "metrics_file_exporter: cannot listen on 127.0.0.1:%d\n", port);
    return 1;
  }
  return 0;
}
