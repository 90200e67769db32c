// `tessera extender`: the kube-scheduler extender protocol (filter, prioritize, bind) for
// clusters that keep the default scheduler (DESIGN §6; docs/kubernetes.md). Runs until
// SIGTERM or SIGINT.
#include <fstream>
#include <iterator>

#include "base/daemon_http.h"
#include "cli/commands.h"
#include "cli/daemon_flags.h"
#include "cli/number_flags.h"
#include "cli/policy_inputs.h"
#include "k8s/extender.h"
#include "policy/registry.h"

namespace tessera::cli {
namespace {

struct ExtenderFlags {
  daemon_flags::Common common;
  PolicyInputFlags inputs;
  std::string listen = "0.0.0.0:8888";
  std::string url_prefix;
  std::string tls_cert, tls_key;
  std::string client_ca;
  std::string token_file;
  double refresh_s = 1;
  bool no_api = false;
  uint64_t max_request_bytes = k8s::ExtenderConfig::kDefaultMaxRequestBytes;
};

// The bearer token in `path`, without surrounding white space (a Secret's file may end in a
// newline); never logged.
Expected<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return Fail("--token-file {}: cannot read it", path);
  const auto first = token.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return Fail("--token-file {}: the file is empty", path);
  token = token.substr(first, token.find_last_not_of(" \t\r\n") - first + 1);
  if (token.find_first_of(" \t\r\n") != std::string::npos) {
    return Fail("--token-file {}: a token is one word; the file holds several", path);
  }
  return token;
}

Status RunExtender(const ExtenderFlags& f) {
  daemon_flags::LogToStderr("tessera-extender");
  SteadyClock clock;
  auto options = daemon_flags::PolicyOptions(f.common);
  if (!options) return Usage(options.error());
  if (auto ok = daemon_flags::CheckPolicyHasProfile(*options, f.inputs.profile); !ok) {
    return Usage(ok.error());
  }
  // kube-scheduler asks an extender about one pod at a time; a policy that places a batch at
  // once (PlaceBatch) would be served wrongly, so it is refused.
  if (auto info = policy::FindPolicy(options->name); info && info->batch) {
    return Usage(
        "policy {} decides placements in batches, and kube-scheduler asks an extender about one "
        "pod at a time: run it as the scheduler (tessera schedule)",
        options->name);
  }
  auto listen = ParseListenAddress(f.listen);
  if (!listen) return Usage("--listen: {}", listen.error().message);
  if (f.tls_cert.empty() != f.tls_key.empty()) {
    return Usage("--tls-cert and --tls-key come together");
  }
  if (!f.client_ca.empty() && f.tls_cert.empty()) {
    return Usage("--client-ca needs --tls-cert and --tls-key (client certificates need HTTPS)");
  }
  if (auto ok = CheckPolicyInputFlags(f.inputs); !ok) return Usage(ok.error());
  if (auto ok = CheckPolicyHasPrometheus(options->name, f.inputs); !ok) return Usage(ok.error());
  auto store = daemon_flags::OpenStore(f.common, clock);
  if (!store) return Usage(store.error());
  std::unique_ptr<k8s::ApiClient> api;
  if (!f.no_api) {
    auto c = daemon_flags::Connect(f.common);
    if (!c) return Failed(c.error());
    api = std::move(*c);
  }
  auto inputs = OpenPolicyInputs(f.inputs, clock);
  if (!inputs) return Failed(inputs.error());
  if (auto ok = CheckPolicySeries(options->name, *inputs); !ok) return Failed(ok.error());
  k8s::ExtenderConfig cfg;
  if (!f.token_file.empty()) {
    auto token = ReadToken(f.token_file);
    if (!token) return Failed(token.error());
    cfg.bearer_token = std::move(*token);
  }
  cfg.client_ca_file = f.client_ca;
  cfg.policy = options->name;
  cfg.policy_options = options->options;
  cfg.seed = f.common.seed;
  cfg.predictor = inputs->predictor.get();
  cfg.learner = inputs->predictor.get();
  cfg.telemetry = inputs->telemetry_view();
  cfg.refresh_s = f.refresh_s;
  cfg.url_prefix = f.url_prefix;
  cfg.tls_cert_file = f.tls_cert;
  cfg.tls_key_file = f.tls_key;
  cfg.max_request_bytes = f.max_request_bytes;
  k8s::Extender ext(**store, clock, cfg, api.get());
  if (auto ok = ext.Start(); !ok) return Failed(ok.error());
  auto port = ext.Serve(listen->first, listen->second);
  if (!port) return Failed(port.error());
  daemon_flags::InstallSignals();
  if (cfg.client_ca_file.empty() && cfg.bearer_token.empty()) {
    spdlog::warn(
        "no client authentication: any client that reaches this port may filter, prioritize and "
        "bind (give --client-ca for kube-scheduler's client certificate, or --token-file)");
  }
  spdlog::info(
      "tessera extender: policy {}, {} nodes with inventories, {} on {} (bodies up to {} "
      "bytes){}",
      cfg.policy, ext.nodes(), f.tls_cert.empty() ? "HTTP" : "HTTPS",
      JoinHostPort(listen->first, *port), cfg.max_request_bytes,
      f.no_api ? " (no API server: bind disabled)" : "");
  daemon_flags::WaitForStop();
  spdlog::info("tessera extender: signal received, shutting down");
  ext.Stop();
  return {};
}

}  // namespace

void AddExtender(CLI::App& app, Status* status) {
  auto f = std::make_shared<ExtenderFlags>();
  CLI::App* sub = app.add_subcommand("extender", "Serve the kube-scheduler extender protocol");
  daemon_flags::AddCommon(sub, f->common);
  AddPolicyInputFlags(sub, f->inputs);
  sub->add_option("--listen", f->listen, "host:port to serve on")->capture_default_str();
  sub->add_option("--url-prefix", f->url_prefix,
                  "Path prefix of the verbs (the urlPrefix's path in KubeSchedulerConfiguration, "
                  "such as /tessera)")
      ->check([](const std::string& v) { return k8s::UrlPrefixProblem(v); }, "PATH");
  sub->add_option("--tls-cert", f->tls_cert, "Serve HTTPS with this certificate (PEM)")
      ->check(CLI::ExistingFile);
  sub->add_option("--tls-key", f->tls_key, "... and this key (PEM)")->check(CLI::ExistingFile);
  sub->add_option("--client-ca", f->client_ca,
                  "Serve the verbs only to clients with a certificate this CA (PEM) signed: "
                  "kube-scheduler's extenders[].tlsConfig.certFile/keyFile (needs --tls-cert)")
      ->check(CLI::ExistingFile);
  sub->add_option("--token-file", f->token_file,
                  "Serve the verbs only to clients sending 'Authorization: Bearer <the token in "
                  "this file>' (with --client-ca, either one admits)")
      ->check(CLI::ExistingFile);
  sub->add_option("--refresh", f->refresh_s,
                  "Seconds between rebuilds of the view from the store, 0.1..3600")
      ->check(Seconds(0.1, 3600))
      ->capture_default_str();
  sub->add_option("--max-request-bytes", f->max_request_bytes,
                  "Largest request body served; a larger one is answered 413. The default fits "
                  "nodeCacheCapable: true up to 5,000 nodes; with whole Node objects allow about "
                  "20KiB per node (units: KiB, MiB, kB, MB)")
      ->transform(CLI::AsSizeValue(true))
      ->check(CLI::Range(uint64_t{64} << 10, uint64_t{1} << 30))
      ->capture_default_str();
  sub->add_flag("--no-api", f->no_api,
                "Do not connect to the API server (filter and prioritize only; bind answers an "
                "error)");
  sub->callback([f, status] { *status = RunExtender(*f); });
}

}  // namespace tessera::cli
