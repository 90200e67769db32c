// The MIG reshape request and answer documents (store/mig_reshape.h): they round-trip, and a
// malformed one is one error naming the document and the member, never a default.
#include "store/mig_reshape.h"

#include <gtest/gtest.h>

namespace tessera::store {
namespace {

const MigReshapeRequest kRequest{.node = "n1",
                                 .gpu_index = 2,
                                 .gpu_uuid = "GPU-x",
                                 .mig = "3g.20gb@0,3g.20gb@4",
                                 .requested_by = "replica-a",
                                 .requested_at = "2026-11-25T10:00:00.000001Z"};

TEST(MigReshapeRecordsTest, RequestsAndAnswersRoundTrip) {
  auto r = MigReshapeRequestFromJson(ToJson(kRequest), "req");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, kRequest);
  const MigReshapeStatus s{
      .node = "n1",
      .gpu_uuid = "GPU-x",
      .mig = kRequest.mig,
      .requested_by = kRequest.requested_by,
      .requested_at = kRequest.requested_at,
      .state = "failed",
      .fault = "insufficient-resources",
      .error = "GPU GPU-x: ...",
      .steps = {"created 3g.20gb@0 (GI 8)", "rollback: destroyed 3g.20gb@0 (GI 8)"},
      .rolled_back = true,
      .restored = true,
      .elapsed_s = 0.25,
      .agent_id = "a1"};
  auto back = MigReshapeStatusFromJson(ToJson(s), "status");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, s);
  EXPECT_TRUE(back->final());
  EXPECT_TRUE(back->Answers(kRequest));
  MigReshapeRequest newer = kRequest;
  newer.requested_at = "2026-11-25T10:00:05.000000Z";
  EXPECT_FALSE(back->Answers(newer));
  MigReshapeStatus applying = s;
  applying.state = "applying";
  EXPECT_FALSE(applying.final());
  EXPECT_EQ(MigReshapeRequestKey("n1", "GPU-x"), "mig-reshape/n1/GPU-x");
  EXPECT_EQ(MigReshapeStatusKey("n1", "GPU-x"), "mig-reshape-status/n1/GPU-x");
}

TEST(MigReshapeRecordsTest, MalformedDocumentsAreOneErrorNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "mig-reshape/n1/GPU-x: malformed MIG reshape request: "},
      {"[1, 2]", "not an object"},
      {R"({"node": "n1", "gpu_index": 0, "gpu_uuid": "GPU-x", "requested_by": "a",
           "requested_at": "t"})",
       "'mig' is missing"},
      {R"({"node": "n1", "gpu_index": 0, "gpu_uuid": "GPU-x", "mig": null, "requested_by": "a",
           "requested_at": "t"})",
       "'mig' is a null"},
      {R"({"node": "n1", "gpu_index": "0", "gpu_uuid": "GPU-x", "mig": "", "requested_by": "a",
           "requested_at": "t"})",
       "'gpu_index' is a string"},
  };
  for (const auto& [text, says] : cases) {
    auto r = MigReshapeRequestFromJson(text, "mig-reshape/n1/GPU-x");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  }
  auto s = MigReshapeStatusFromJson(R"({"state": "done"})", "mig-reshape-status/n1/GPU-x");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            "mig-reshape-status/n1/GPU-x: malformed MIG reshape status: 'node' is missing");
}

}  // namespace
}  // namespace tessera::store
