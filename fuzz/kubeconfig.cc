// A kubeconfig file (k8s/kubeconfig.h), as `--kubeconfig` reads it.
#include "fuzz.h"
#include "k8s/kubeconfig.h"

void tessera::fuzz::FuzzOne(const std::string& path, std::string_view) {
  (void)k8s::KubeconfigCredentials(path);
}
