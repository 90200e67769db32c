#include "k8s/kubeconfig.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::k8s {
namespace {

Expected<std::string> ReadFile(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Fail("{}: {} is a directory", what, path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail("{}: cannot read {}", what, path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Fail("{}: cannot read {}", what, path);
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Finds the entry named `name` in a kubeconfig list (clusters, users, contexts).
YAML::Node Named(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) return {};
  for (const YAML::Node& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name) return item;
  }
  return {};
}

std::string Str(const YAML::Node& n, const char* key) {
  return n && n.IsMap() && n[key] && n[key].IsScalar() ? n[key].as<std::string>() : "";
}

}  // namespace

Expected<std::string> DecodeBase64(std::string_view text) {
  std::string clean;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) clean += c;
  }
  if (clean.size() % 4 != 0) return Fail("invalid base64 data");
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  if (n < 0) return Fail("invalid base64 data");
  size_t len = static_cast<size_t>(n);
  if (!clean.empty() && clean.back() == '=') --len;
  if (clean.size() >= 2 && clean[clean.size() - 2] == '=') --len;
  out.resize(len);
  return out;
}

Expected<Credentials> InClusterCredentials(std::string_view dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port) {
    return Fail("in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset");
  }
  Credentials c;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6 service address
  c.server = "https://" + h + ":" + port;
  const std::string d(dir);
  auto ca = ReadFile(d + "/ca.crt", "in-cluster config");
  if (!ca) return std::unexpected(ca.error());
  c.ca_pem = *ca;
  c.token_file = d + "/token";
  auto token = ReadFile(c.token_file, "in-cluster config");
  if (!token) return std::unexpected(token.error());
  c.token = Trim(*token);
  if (c.token.empty()) return Fail("in-cluster config: {} is empty", c.token_file);
  if (auto ns = ReadFile(d + "/namespace", "in-cluster config"); ns && !Trim(*ns).empty()) {
    c.namespace_ = Trim(*ns);
  }
  c.source = "in-cluster";
  return c;
}

namespace {

// The credentials of `root`, a parsed kubeconfig; yaml-cpp may throw on a node of an
// unexpected kind (a list entry that is a scalar, a map where a list should be).
Expected<Credentials> CredentialsOf(const YAML::Node& root, const std::string& path,
                                    const std::string& context) {
  const std::string ctx_name = context.empty() ? Str(root, "current-context") : context;
  if (ctx_name.empty()) return Fail("kubeconfig {}: no current-context and none given", path);
  const YAML::Node ctx = Named(root["contexts"], ctx_name)["context"];
  if (!ctx) return Fail("kubeconfig {}: context '{}' not found", path, ctx_name);
  const std::string where = "kubeconfig " + path + " context " + ctx_name;
  const YAML::Node cluster = Named(root["clusters"], Str(ctx, "cluster"))["cluster"];
  if (!cluster) return Fail("{}: cluster '{}' not found", where, Str(ctx, "cluster"));
  const YAML::Node user = Named(root["users"], Str(ctx, "user"))["user"];
  if (!Str(ctx, "user").empty() && !user) {
    return Fail("{}: user '{}' not found", where, Str(ctx, "user"));
  }
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  auto resolve = [&](const std::string& p) {
    return std::filesystem::path(p).is_absolute() ? p : (base / p).string();
  };
  // "<field>-data" (base64) or "<field>" (a file path).
  auto material = [&](const YAML::Node& n, const std::string& field) -> Expected<std::string> {
    if (const std::string data = Str(n, (field + "-data").c_str()); !data.empty()) {
      auto decoded = DecodeBase64(data);
      if (!decoded) return Fail("{}: {}-data: invalid base64", where, field);
      return *decoded;
    }
    if (const std::string file = Str(n, field.c_str()); !file.empty()) {
      return ReadFile(resolve(file), where + ": " + field);
    }
    return std::string();
  };

  Credentials c;
  c.source = where;
  c.server = Str(cluster, "server");
  if (c.server.empty()) return Fail("{}: cluster has no server", where);
  if (Str(cluster, "insecure-skip-tls-verify") == "true") {
    return Fail("{}: insecure-skip-tls-verify is refused; give certificate-authority", where);
  }
  auto ca = material(cluster, "certificate-authority");
  if (!ca) return std::unexpected(ca.error());
  c.ca_pem = *ca;
  if (c.server.starts_with("https://") && c.ca_pem.empty()) {
    return Fail("{}: an https server needs certificate-authority(-data)", where);
  }
  if (user) {
    c.token = Str(user, "token");
    if (const std::string tf = Str(user, "tokenFile"); !tf.empty()) {
      c.token_file = resolve(tf);
      auto t = ReadFile(c.token_file, where + ": tokenFile");
      if (!t) return std::unexpected(t.error());
      c.token = Trim(*t);
    }
    auto cert = material(user, "client-certificate");
    if (!cert) return std::unexpected(cert.error());
    auto key = material(user, "client-key");
    if (!key) return std::unexpected(key.error());
    c.client_cert_pem = *cert;
    c.client_key_pem = *key;
    if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
      return Fail("{}: client-certificate and client-key come together", where);
    }
    if (user["exec"] || user["auth-provider"]) {
      if (c.token.empty() && c.client_cert_pem.empty()) {
        return Fail(
            "{}: exec and auth-provider plugins are not supported; use a token or a "
            "client certificate",
            where);
      }
    }
  }
  if (const std::string ns = Str(ctx, "namespace"); !ns.empty()) c.namespace_ = ns;
  return c;
}

}  // namespace

Expected<Credentials> KubeconfigCredentials(const std::string& path, const std::string& context) {
  // Read here rather than by YAML::LoadFile: a directory opens as a stream whose first read
  // throws std::ios_base::failure, which would end the daemon with SIGABRT.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return Fail("kubeconfig {}: no such file", path);
  if (std::filesystem::is_directory(status)) {
    return Fail("kubeconfig {}: is a directory, not a kubeconfig file", path);
  }
  auto text = ReadFile(path, "kubeconfig");
  if (!text) return std::unexpected(text.error());
  try {
    return CredentialsOf(YAML::Load(*text), path, context);
  } catch (const std::exception& e) {
    // Found by fuzzing (fuzz/kubeconfig.cc): a malformed file threw out of here and ended
    // the daemon; it is now an error naming the file.
    return Fail("kubeconfig {}: {}", path, e.what());
  }
}

Expected<Credentials> DefaultCredentials(const std::string& kubeconfig,
                                         const std::string& context) {
  if (!kubeconfig.empty()) return KubeconfigCredentials(kubeconfig, context);
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host && *host) {
    return InClusterCredentials();
  }
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::string first(env);
    first = first.substr(0, first.find(':'));
    return KubeconfigCredentials(first, context);
  }
  constexpr const char* kFix =
      "give --kubeconfig FILE, set $KUBECONFIG, or run in a pod (in-cluster config: "
      "$KUBERNETES_SERVICE_HOST and the service account)";
  const char* home = std::getenv("HOME");
  if (!home || !*home) return Fail("no kubeconfig: $HOME is unset; {}", kFix);
  const std::string path = std::string(home) + "/.kube/config";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return Fail("no kubeconfig: {} does not exist; {}", path, kFix);
  return KubeconfigCredentials(path, context);
}

}  // namespace tessera::k8s
