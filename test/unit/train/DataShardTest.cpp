//===- DataShardTest.cpp - Ranks' shares of the data stream ---------------===//

#include "runtime/train/DataShard.h"

#include <gtest/gtest.h>

#include <set>

using lap::train::DataShard;

// Three ranks of two micro-batches of 4: every step's 24 samples are read
// once, in the stream's order within each rank, whatever the ranks.
TEST(DataShard, RanksTileEveryStep) {
  const uint64_t ranks = 3, perRank = 8, steps = 5;
  std::set<uint64_t> read;
  for (uint64_t r = 0; r < ranks; ++r) {
    DataShard shard{r, ranks, perRank};
    for (uint64_t s = 0; s < steps * perRank; ++s) {
      uint64_t g = shard.global(s);
      EXPECT_EQ(g / (ranks * perRank), s / perRank); // the same step
      EXPECT_TRUE(read.insert(g).second) << g;
    }
  }
  EXPECT_EQ(read.size(), steps * ranks * perRank);
  EXPECT_EQ(*read.rbegin(), steps * ranks * perRank - 1);
}

TEST(DataShard, PositionsAtStepBoundariesMeanTheSameToEveryRank) {
  DataShard one{0, 1, 24}, rank2{2, 3, 8};
  for (uint64_t step = 0; step < 4; ++step) {
    EXPECT_EQ(rank2.reached(step * 8), step * 24);
    EXPECT_EQ(rank2.local(step * 24), step * 8);
    EXPECT_EQ(one.reached(step * 24), step * 24);
  }
  // One rank: the identity, also off step boundaries.
  for (uint64_t p : {0, 5, 23, 25, 1000}) {
    EXPECT_EQ(one.local(p), p);
    EXPECT_EQ(one.global(p), p);
    EXPECT_EQ(one.reached(p), p);
  }
}
