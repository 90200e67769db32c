#include "k8s/api_client.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <charconv>
#include <chrono>
#include <fstream>
#include <sstream>

namespace tessera::k8s {
namespace {

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A new X509_STORE holding every certificate of the PEM bundle; the SSL context takes it.
X509_STORE* StoreFromPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (!bio) return nullptr;
  X509_STORE* store = X509_STORE_new();
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    added += X509_STORE_add_cert(store, cert) == 1;
    X509_free(cert);
  }
  BIO_free(bio);
  if (added == 0) {
    X509_STORE_free(store);
    return nullptr;
  }
  return store;
}

template <typename Rep, typename Period>
std::pair<time_t, time_t> SecUsec(std::chrono::duration<Rep, Period> d) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  return {static_cast<time_t>(us / 1000000), static_cast<time_t>(us % 1000000)};
}

void SetTimeouts(httplib::ClientImpl& c, double connect_s, double read_s) {
  auto [cs, cu] = SecUsec(std::chrono::duration<double>(connect_s));
  auto [rs, ru] = SecUsec(std::chrono::duration<double>(read_s));
  c.set_connection_timeout(cs, cu);
  c.set_read_timeout(rs, ru);
  c.set_write_timeout(rs, ru);
}

}  // namespace

std::string UrlEscape(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Expected<std::unique_ptr<ApiClient>> ApiClient::Create(Credentials credentials,
                                                       ApiClientOptions options) {
  Target t;
  std::string_view rest = credentials.server;
  if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
    t.tls = false;
    t.port = 80;
  } else {
    return Fail("API server '{}': want https://host[:port]", credentials.server);
  }
  rest = rest.substr(0, rest.find('/'));
  std::string_view host = rest;
  if (rest.starts_with('[')) {  // IPv6 literal
    const size_t close = rest.find(']');
    if (close == std::string_view::npos)
      return Fail("API server '{}': bad host", credentials.server);
    host = rest.substr(1, close - 1);
    rest.remove_prefix(close + 1);
    if (rest.starts_with(':'))
      rest.remove_prefix(1);
    else
      rest = {};
  } else if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    rest.remove_prefix(colon + 1);
  } else {
    rest = {};
  }
  if (!rest.empty()) {
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), t.port);
    if (ec != std::errc() || ptr != rest.data() + rest.size() || t.port <= 0 || t.port > 65535) {
      return Fail("API server '{}': bad port", credentials.server);
    }
  }
  t.host = std::string(host);
  if (t.host.empty()) return Fail("API server '{}': no host", credentials.server);
  if (t.tls) {
    X509_STORE* store = StoreFromPem(credentials.ca_pem);
    if (!store) {
      return Fail("API server {} ({}): no usable CA certificate; the CA is always verified",
                  credentials.server, credentials.source);
    }
    X509_STORE_free(store);
  }
  std::unique_ptr<ApiClient> client(new ApiClient(std::move(credentials), options, t));
  // Fail early on unusable client-certificate material.
  if (auto c = client->Connect(options.timeout_s); !c) return std::unexpected(c.error());
  return client;
}

ApiClient::ApiClient(Credentials credentials, ApiClientOptions options, Target target)
    : credentials_(std::move(credentials)), options_(options), target_(std::move(target)) {
  token_ = credentials_.token;
  token_read_at_ = NowS();
}

ApiClient::~ApiClient() { CancelStreams(); }

Expected<std::unique_ptr<httplib::ClientImpl>> ApiClient::Connect(double read_timeout_s) {
  std::unique_ptr<httplib::ClientImpl> c;
  if (target_.tls) {
    std::unique_ptr<httplib::SSLClient> ssl;
    if (!credentials_.client_cert_pem.empty()) {
      BIO* cb = BIO_new_mem_buf(credentials_.client_cert_pem.data(),
                                static_cast<int>(credentials_.client_cert_pem.size()));
      X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
      BIO_free(cb);
      BIO* kb = BIO_new_mem_buf(credentials_.client_key_pem.data(),
                                static_cast<int>(credentials_.client_key_pem.size()));
      EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
      BIO_free(kb);
      if (!cert || !key) {
        X509_free(cert);
        EVP_PKEY_free(key);
        return Fail("{}: the client certificate or key is not valid PEM", credentials_.source);
      }
      ssl = std::make_unique<httplib::SSLClient>(target_.host, target_.port, cert, key);
      X509_free(cert);
      EVP_PKEY_free(key);
    } else {
      ssl = std::make_unique<httplib::SSLClient>(target_.host, target_.port);
    }
    if (!ssl->is_valid()) return Fail("{}: cannot set up TLS", credentials_.source);
    ssl->set_ca_cert_store(StoreFromPem(credentials_.ca_pem));
    ssl->enable_server_certificate_verification(true);
    c = std::move(ssl);
  } else {
    c = std::make_unique<httplib::ClientImpl>(target_.host, target_.port);
  }
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);  // headers and body go out as separate writes: no Nagle stalls
  SetTimeouts(*c, options_.connect_timeout_s, read_timeout_s);
  return c;
}

std::unique_ptr<httplib::ClientImpl> ApiClient::Acquire(Error& error) {
  {
    std::lock_guard lock(mu_);
    const double now = NowS();
    while (!idle_.empty()) {
      auto [c, since] = std::move(idle_.back());
      idle_.pop_back();
      if (now - since <= options_.max_idle_s) return std::move(c);
    }
  }
  auto c = Connect(options_.timeout_s);
  if (!c) {
    error = c.error();
    return nullptr;
  }
  return std::move(*c);
}

void ApiClient::Release(std::unique_ptr<httplib::ClientImpl> client) {
  std::lock_guard lock(mu_);
  if (idle_.size() < options_.max_idle_connections) idle_.emplace_back(std::move(client), NowS());
}

std::string ApiClient::Token() {
  std::lock_guard lock(mu_);
  if (!credentials_.token_file.empty() && NowS() - token_read_at_ > 60) {
    std::ifstream in(credentials_.token_file);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string t = ss.str();
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    if (!t.empty()) token_ = t;  // keep the last good token if the file is mid-rotation
    token_read_at_ = NowS();
  }
  return token_;
}

std::string ApiClient::Describe(std::string_view method, const std::string& path) const {
  return fmt::format("{} {}{}", method, credentials_.server, path);
}

namespace {

// What went wrong on the wire, for a message that already names the method and URL. httplib
// says only "Connection" for a refused, unreachable or timed-out connect; say so, with the
// address it tried.
std::string TransportError(httplib::ClientImpl& c, httplib::Error err, bool tls,
                           const std::string& host, int port) {
  if (err == httplib::Error::Connection) {
    return fmt::format("cannot connect to {}:{} (connection refused, unreachable or timed out)",
                       host, port);
  }
  std::string what = httplib::to_string(err);
  if (tls && err == httplib::Error::SSLServerVerification) {
    const long v = static_cast<httplib::SSLClient&>(c).get_openssl_verify_result();
    what += fmt::format(" ({})", X509_verify_cert_error_string(v));
  }
  return what;
}

}  // namespace

Expected<HttpResponse> ApiClient::Call(std::string_view method, const std::string& path,
                                       const std::string& body, std::string_view content_type) {
  httplib::Headers headers = {{"Accept", "application/json"}, {"User-Agent", options_.user_agent}};
  if (const std::string token = Token(); !token.empty()) {
    headers.emplace("Authorization", "Bearer " + token);
  }
  // One retry on a fresh connection: a pooled keep-alive connection may have been closed by
  // the server while idle, which shows only when it is used.
  for (int attempt = 0; attempt < 2; ++attempt) {
    Error error;
    std::unique_ptr<httplib::ClientImpl> c = Acquire(error);
    if (!c) return Fail("{}: {}", Describe(method, path), error.message);
    const std::string ct(content_type);
    httplib::Result r = [&] {
      if (method == "GET") return c->Get(path, headers);
      if (method == "POST") return c->Post(path, headers, body, ct);
      if (method == "PUT") return c->Put(path, headers, body, ct);
      if (method == "PATCH") return c->Patch(path, headers, body, ct);
      return c->Delete(path, headers);
    }();
    if (r) {
      HttpResponse out{r->status, std::move(r->body)};
      Release(std::move(c));
      return out;
    }
    const httplib::Error err = r.error();
    const bool retriable =
        attempt == 0 && (err == httplib::Error::Read || err == httplib::Error::Write ||
                         err == httplib::Error::Connection);
    if (!retriable) {
      return Fail("{}: {}", Describe(method, path),
                  TransportError(*c, err, target_.tls, target_.host, target_.port));
    }
  }
  return Fail("{}: no answer", Describe(method, path));
}

Expected<HttpResponse> ApiClient::Get(const std::string& path) { return Call("GET", path, "", ""); }
Expected<HttpResponse> ApiClient::Post(const std::string& path, const std::string& body) {
  return Call("POST", path, body, "application/json");
}
Expected<HttpResponse> ApiClient::Put(const std::string& path, const std::string& body) {
  return Call("PUT", path, body, "application/json");
}
Expected<HttpResponse> ApiClient::Patch(const std::string& path, const std::string& body,
                                        std::string_view content_type) {
  return Call("PATCH", path, body, content_type);
}
Expected<HttpResponse> ApiClient::Delete(const std::string& path) {
  return Call("DELETE", path, "", "");
}

Expected<HttpResponse> ApiClient::Stream(const std::string& path,
                                         const std::function<bool(std::string_view)>& on_line,
                                         double idle_timeout_s, const void* owner) {
  auto made = Connect(idle_timeout_s);
  if (!made) return std::unexpected(made.error());
  std::unique_ptr<httplib::ClientImpl> c = std::move(*made);
  c->set_keep_alive(false);
  {
    std::lock_guard lock(mu_);
    if (cancelled_.contains(nullptr) || cancelled_.contains(owner)) {
      return Fail("{}: cancelled", Describe("GET", path));
    }
    streams_[c.get()] = owner;
  }
  httplib::Headers headers = {{"Accept", "application/json"}, {"User-Agent", options_.user_agent}};
  if (const std::string token = Token(); !token.empty()) {
    headers.emplace("Authorization", "Bearer " + token);
  }
  int status = 0;
  std::string buffer, error_body;
  bool stopped = false;
  httplib::Result r = c->Get(
      path, headers,
      [&](const httplib::Response& res) {
        status = res.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (status != 200) {
          if (error_body.size() < 65536) error_body.append(data, n);
          return true;
        }
        buffer.append(data, n);
        size_t start = 0;
        for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
          if (nl > start && !on_line(std::string_view(buffer).substr(start, nl - start))) {
            stopped = true;
            return false;
          }
        }
        buffer.erase(0, start);
        return true;
      });
  bool cancelled = false;
  {
    std::lock_guard lock(mu_);
    streams_.erase(c.get());
    cancelled = cancelled_.contains(nullptr) || cancelled_.contains(owner);
  }
  if (stopped) return HttpResponse{200, ""};
  if (!r) {
    if (cancelled) return Fail("{}: cancelled", Describe("GET", path));
    // A stream that delivered its 200 header and then broke is an Error too: the caller
    // re-watches from the last resourceVersion it saw.
    return Fail("{}: stream broke: {}", Describe("GET", path),
                TransportError(*c, r.error(), target_.tls, target_.host, target_.port));
  }
  if (status == 200 && !buffer.empty()) on_line(buffer);  // last line without a newline
  return HttpResponse{status, std::move(error_body)};
}

void ApiClient::CancelStreams(const void* owner) {
  std::lock_guard lock(mu_);
  cancelled_.insert(owner);
  for (auto& [c, o] : streams_) {
    if (owner == nullptr || o == owner) c->stop();
  }
}

void ApiClient::ResumeStreams(const void* owner) {
  std::lock_guard lock(mu_);
  cancelled_.erase(owner);
}

}  // namespace tessera::k8s
