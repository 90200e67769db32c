#pragma once
// Where the API server is and how to prove who we are (DESIGN §6): the in-cluster service
// account (token and CA under /var/run/secrets/kubernetes.io/serviceaccount,
// $KUBERNETES_SERVICE_HOST/PORT) or a kubeconfig file (its current context, or a named one;
// bearer token, token file or client certificate; CA from a file or inline data).
//
// The CA is always verified: a kubeconfig with insecure-skip-tls-verify, or an https server
// without a CA, is refused. Credentials hold secrets: nothing here logs them, and their
// messages name files and contexts, never token or key contents. Plain values; file reads only.

#include <string>
#include <string_view>

#include "base/error.h"

namespace tessera::k8s {

struct Credentials {
  std::string server;      // "https://10.96.0.1:443"; http:// only for a local `kubectl proxy`
  std::string ca_pem;      // PEM bundle the server's certificate must chain to
  std::string token;       // bearer token; empty when token_file or a client cert is used
  std::string token_file;  // re-read every minute (bound service-account tokens rotate)
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string namespace_ = "default";  // the pod's own namespace in-cluster
  std::string source;                  // "in-cluster" | "kubeconfig FILE context NAME"
};

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// $KUBERNETES_SERVICE_HOST/PORT with `dir`/token, ca.crt and namespace.
[[nodiscard]] Expected<Credentials> InClusterCredentials(std::string_view dir = kServiceAccountDir);
// `context` empty: the file's current-context.
[[nodiscard]] Expected<Credentials> KubeconfigCredentials(const std::string& path,
                                                          const std::string& context = "");
// The kubeconfig given, else in-cluster when $KUBERNETES_SERVICE_HOST is set, else
// $KUBECONFIG (its first file), else ~/.kube/config.
[[nodiscard]] Expected<Credentials> DefaultCredentials(const std::string& kubeconfig = "",
                                                       const std::string& context = "");

// Standard base64 (kubeconfig's *-data fields); the error says only that the data is invalid.
[[nodiscard]] Expected<std::string> DecodeBase64(std::string_view text);

}  // namespace tessera::k8s
