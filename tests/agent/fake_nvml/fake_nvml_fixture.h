#pragma once
// The stand-in NVML (fake_nvml.cc) opened through NvmlBackend, with the library's test controls
// found by dlsym. Every test starts from, and leaves behind, the library's initial node
// (fake_nvml_reset): its state is process-wide.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>

#include "agent/nvml_backend.h"

namespace tessera::agent {

class FakeNvmlFixture : public testing::Test {
 protected:
  void SetUp() override {
    auto b = NvmlBackend::Open(TESSERA_FAKE_NVML);
    ASSERT_TRUE(b) << b.error().message;
    backend_ = std::move(*b);
    lib_ = dlopen(TESSERA_FAKE_NVML, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(lib_, nullptr);
    reset_ = Control<void (*)()>("fake_nvml_reset");
    ASSERT_NE(reset_, nullptr);
    reset_();
  }
  void TearDown() override {
    if (reset_) reset_();
    if (lib_) dlclose(lib_);
  }
  // A control function of the library (fake_nvml.cc's header lists them).
  template <typename F>
  F Control(const char* name) {
    auto f = reinterpret_cast<F>(dlsym(lib_, name));
    EXPECT_NE(f, nullptr) << name;
    return f;
  }

  std::unique_ptr<NvmlBackend> backend_;
  void* lib_ = nullptr;
  void (*reset_)() = nullptr;
};

}  // namespace tessera::agent
