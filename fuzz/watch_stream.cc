// A watch stream from the API server, line by line (k8s/informer.h DecodeWatchEvent).
#include "fuzz.h"
#include "k8s/informer.h"

void tessera::fuzz::FuzzOne(const std::string&, std::string_view data) {
  while (!data.empty()) {
    const size_t end = data.find('\n');
    (void)k8s::DecodeWatchEvent(data.substr(0, end));
    if (end == std::string_view::npos) break;
    data.remove_prefix(end + 1);
  }
}
