// plan_memory: buffers with disjoint lives share space, overlapping lives never share it,
// offsets are aligned, in-place reuse is taken exactly when legal, and the printer's
// format. A randomized property test checks the invariants over many plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "scheduler/memory_plan.h"
#include "support/error.h"
#include "test_util.h"

namespace coil::sched {
namespace {

BufferLife buf(std::string name, SymInt bytes, int def, int last_use, std::vector<int> inplace = {}) {
  return {std::move(name), bytes, def, last_use, std::move(inplace)};
}

int64_t aligned(int64_t bytes) { return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

TEST(MemoryPlan, Empty) {
  MemoryPlan plan = plan_memory({});
  EXPECT_TRUE(plan.offsets.empty());
  EXPECT_EQ(plan.arena_bytes, 0);
  EXPECT_EQ(plan.naive_bytes, 0);
  EXPECT_EQ(str({}, plan), "arena 0 B (naive 0 B, 0% saved)\n");
}

TEST(MemoryPlan, DisjointLivesShareSpace) {
  std::vector<BufferLife> bs = {buf("buf0", 4096, 0, 1), buf("buf1", 4096, 2, 3), buf("buf2", 1024, 4, 5)};
  MemoryPlan plan = plan_memory(bs);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(plan.reused, (std::vector<int>{-1, -1, -1}));
  EXPECT_EQ(plan.arena_bytes, 4096);
  EXPECT_EQ(plan.naive_bytes, 9216);
}

// buf1 is written at step 1 while buf0 is still read there: without an in-place
// candidate they must not share.
TEST(MemoryPlan, LivesTouchingAtOneStepOverlap) {
  MemoryPlan plan = plan_memory({buf("buf0", 4096, 0, 1), buf("buf1", 4096, 1, 2)});
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 4096}));
  EXPECT_EQ(plan.arena_bytes, 8192);
}

TEST(MemoryPlan, FirstFitTakesTheLowestGapThatFits) {
  std::vector<BufferLife> bs = {
      buf("buf0", 64, 0, 5),   // [0, 64)
      buf("buf1", 128, 0, 1),  // [64, 192), free from step 2
      buf("buf2", 64, 0, 5),   // [192, 256)
      buf("buf3", 64, 2, 3),   // the gap's start
      buf("buf4", 128, 2, 3),  // the 64 bytes left in the gap are too few
  };
  MemoryPlan plan = plan_memory(bs);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 64, 192, 64, 256}));
  EXPECT_EQ(plan.arena_bytes, 384);
}

// Decisions follow def steps, not input order; ties keep the input order.
TEST(MemoryPlan, KernelOrderDecides) {
  std::vector<BufferLife> bs = {buf("late", 64, 3, 4), buf("b", 64, 0, 4), buf("a", 64, 0, 4)};
  MemoryPlan plan = plan_memory(bs);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{128, 0, 64}));
}

TEST(MemoryPlan, OffsetsAreAligned) {
  std::vector<BufferLife> bs = {buf("buf0", 1, 0, 9), buf("buf1", 100, 0, 9), buf("buf2", 64, 0, 9),
                                buf("buf3", 65, 0, 9)};
  MemoryPlan plan = plan_memory(bs);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 64, 192, 256}));
  EXPECT_EQ(plan.arena_bytes, 384);
  EXPECT_EQ(plan.naive_bytes, 64 + 128 + 64 + 128);
}

TEST(MemoryPlan, InPlaceTakenWhenLegal) {
  std::vector<BufferLife> bs = {buf("buf0", 64, 0, 3), buf("buf1", 4096, 0, 2), buf("buf3", 4096, 2, 3, {1})};
  MemoryPlan plan = plan_memory(bs);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 64, 64}));
  EXPECT_EQ(plan.reused, (std::vector<int>{-1, -1, 1}));
  EXPECT_EQ(plan.arena_bytes, 64 + 4096);
}

// Two outputs of one kernel may both name the same dying input: the first takes it, the
// second gets fresh space (or its next candidate).
TEST(MemoryPlan, InPlaceCandidateTakenOnce) {
  std::vector<BufferLife> bs = {buf("buf0", 256, 0, 1), buf("buf1", 256, 0, 1), buf("buf2", 256, 1, 2, {0}),
                                buf("buf3", 256, 1, 2, {0}), buf("buf4", 256, 1, 2, {0, 1})};
  MemoryPlan plan = plan_memory(bs);
  EXPECT_EQ(plan.reused, (std::vector<int>{-1, -1, 0, -1, 1}));
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 256, 0, 512, 256}));
  EXPECT_EQ(plan.arena_bytes, 768);
}

// A candidate still read after the kernel, one of another size, or one out of range is
// a scheduler bug: the planner refuses it rather than corrupt a live buffer.
TEST(MemoryPlan, IllegalInputIsAnInternalError) {
  EXPECT_THROW(plan_memory({buf("buf0", 64, 0, 3), buf("buf1", 64, 2, 3, {0})}), InternalError);
  EXPECT_THROW(plan_memory({buf("buf0", 64, 0, 2), buf("buf1", 128, 2, 3, {0})}), InternalError);
  EXPECT_THROW(plan_memory({buf("buf0", 64, 0, 2), buf("buf1", 64, 2, 3, {2})}), InternalError);
  EXPECT_THROW(plan_memory({buf("buf0", 64, 0, 2), buf("buf1", 64, 2, 3, {1})}), InternalError);
  EXPECT_THROW(plan_memory({buf("buf0", 64, 2, 2), buf("buf1", 64, 2, 3, {0})}), InternalError);
  EXPECT_THROW(plan_memory({buf("buf0", 64, 3, 2)}), InternalError);
  EXPECT_THROW(plan_memory({buf("buf0", -1, 0, 2)}), InternalError);
}

TEST(MemoryPlan, ZeroSizeTakesNoSpace) {
  std::vector<BufferLife> bs = {buf("empty", 0, 0, 5), buf("buf1", 100, 0, 5), buf("empty2", 0, 1, 5),
                                buf("buf3", 64, 1, 5)};
  MemoryPlan plan = plan_memory(bs);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 0, 128}));
  EXPECT_EQ(plan.arena_bytes, 192);
  EXPECT_EQ(plan.naive_bytes, 192);
  EXPECT_EQ(plan_memory({buf("empty", 0, 0, 1)}).arena_bytes, 0);
}

TEST(MemoryPlan, PrinterFormat) {
  std::vector<BufferLife> bs = {buf("buf1", 4096, 0, 2), buf("buf3", 4096, 2, 3, {0}), buf("buf12", 100, 1, 10)};
  MemoryPlan plan = plan_memory(bs);
  EXPECT_EQ(str(bs, plan),
            "buf1   4096 B  live [0, 2]   offset    0\n"
            "buf3   4096 B  live [2, 3]   offset    0  (in place of buf1)\n"
            "buf12   100 B  live [1, 10]  offset 4096\n"
            "arena 4224 B (naive 8320 B, 49% saved)\n");
}

// ---- randomized invariants ----

std::vector<BufferLife> random_buffers(std::mt19937 &rng) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int steps = uniform(1, 12);
  std::vector<BufferLife> bs(uniform(0, 24));
  for (size_t i = 0; i < bs.size(); ++i) {
    BufferLife &b = bs[i];
    b.name = "buf" + std::to_string(i);
    b.def = uniform(0, steps - 1);
    b.last_use = b.def + uniform(0, 3);
    b.bytes = uniform(0, 9) == 0 ? 0 : uniform(1, 8) * (uniform(0, 1) ? 64 : 37);
  }
  // Some buffers get the size of one that dies at their def, and name it a candidate;
  // visited by def so that a candidate's size is final before anyone copies it.
  std::vector<size_t> by_def(bs.size());
  std::iota(by_def.begin(), by_def.end(), 0);
  std::stable_sort(by_def.begin(), by_def.end(), [&](size_t a, size_t b) { return bs[a].def < bs[b].def; });
  for (size_t i : by_def) {
    for (size_t j = 0; j < bs.size(); ++j) {
      if (bs[j].def >= bs[i].def || bs[j].last_use != bs[i].def || uniform(0, 2) != 0) continue;
      if (bs[i].inplace_candidates.empty()) bs[i].bytes = bs[j].bytes;
      if (bs[i].bytes == bs[j].bytes) bs[i].inplace_candidates.push_back(static_cast<int>(j));
    }
  }
  return bs;
}

bool lives_overlap(const BufferLife &a, const BufferLife &b) {
  return a.def <= b.last_use && b.def <= a.last_use;
}

// The most bytes live at one step, a buffer taken over in place counted once.
int64_t peak_live_bytes(const std::vector<BufferLife> &bs, const MemoryPlan &plan) {
  int64_t peak = 0;
  for (const BufferLife &at : bs) {
    int64_t live = 0;
    for (size_t i = 0; i < bs.size(); ++i)
      if (bs[i].def <= at.def && at.def <= bs[i].last_use) live += aligned(bs[i].bytes);
    for (size_t i = 0; i < bs.size(); ++i)
      if (plan.reused[i] >= 0 && bs[i].def == at.def) live -= aligned(bs[i].bytes);
    peak = std::max(peak, live);
  }
  return peak;
}

void check_invariants(const std::vector<BufferLife> &bs, const MemoryPlan &plan) {
  ASSERT_EQ(plan.offsets.size(), bs.size());
  ASSERT_EQ(plan.reused.size(), bs.size());
  int64_t naive = 0, end = 0;
  for (size_t i = 0; i < bs.size(); ++i) {
    naive += aligned(bs[i].bytes);
    end = std::max(end, int64_t(plan.offsets[i] + aligned(bs[i].bytes)));
    EXPECT_EQ(int64_t(plan.offsets[i]) % kArenaAlignment, 0);
    if (bs[i].bytes == 0) {
      EXPECT_EQ(plan.offsets[i], 0);
    }
    if (int r = plan.reused[i]; r >= 0) {
      const auto &candidates = bs[i].inplace_candidates;
      EXPECT_NE(std::find(candidates.begin(), candidates.end(), r), candidates.end());
      EXPECT_EQ(plan.offsets[i], plan.offsets[r]);
    }
    for (size_t j = 0; j < i; ++j) {
      if (bs[i].bytes == 0 || bs[j].bytes == 0 || !lives_overlap(bs[i], bs[j])) continue;
      if (plan.reused[i] == static_cast<int>(j) || plan.reused[j] == static_cast<int>(i)) continue;
      bool apart = plan.offsets[i] + aligned(bs[i].bytes) <= plan.offsets[j] ||
                   plan.offsets[j] + aligned(bs[j].bytes) <= plan.offsets[i];
      EXPECT_TRUE(apart) << bs[i].name << " and " << bs[j].name << " overlap in memory";
    }
  }
  EXPECT_EQ(plan.naive_bytes, naive);
  EXPECT_EQ(plan.arena_bytes, end);
  EXPECT_LE(plan.arena_bytes, plan.naive_bytes);
  EXPECT_GE(plan.arena_bytes, peak_live_bytes(bs, plan));
}

TEST(MemoryPlan, RandomPlansKeepTheInvariants) {
  std::mt19937 rng(20240611);
  int reused = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<BufferLife> bs = random_buffers(rng);
    MemoryPlan plan = plan_memory(bs);
    SCOPED_TRACE(str(bs, plan));
    check_invariants(bs, plan);
    EXPECT_EQ(str(bs, plan_memory(bs)), str(bs, plan)) << "not deterministic";
    reused += static_cast<int>(std::count_if(plan.reused.begin(), plan.reused.end(), [](int r) { return r >= 0; }));
    if (HasFailure()) return;
  }
  EXPECT_GT(reused, 100) << "the generator should exercise in-place reuse";
}

// Sizes of symbols: offsets are expressions of them. A gap takes a buffer only where it
// fits at every size (s1*64 bytes fit 1 KiB at s1 = 2, not at s1 = 20), else the buffer
// goes above every live one; in-place reuse needs equal expressions.
TEST(MemoryPlan, SymbolicSizesGiveOffsetsThatHoldAtEverySize) {
  test::Symbols sym;
  SymInt s0 = sym("s0", 4), s1 = sym("s1", 2);
  std::vector<BufferLife> bs = {buf("buf0", s0 * 64, 0, 3), buf("buf1", 1024, 0, 1), buf("buf2", s0 * 64, 1, 3),
                                buf("buf3", 512, 2, 3), buf("buf4", s1 * 64, 2, 3), buf("buf5", s0 * 64, 3, 4, {0})};
  MemoryPlan plan = plan_memory(bs);
  EXPECT_EQ(str(plan.offsets[0]), "0");
  EXPECT_EQ(str(plan.offsets[1]), "s0*64");
  EXPECT_EQ(str(plan.offsets[2]), "s0*64 + 1024");
  EXPECT_EQ(str(plan.offsets[3]), "s0*64") << "512 bytes fit where buf1's 1024 were, at every size";
  EXPECT_EQ(str(plan.offsets[4]), "s0*128 + 1024") << "s1*64 bytes fit there only at some sizes";
  EXPECT_EQ(plan.reused[5], 0);
  EXPECT_EQ(str(plan.arena_bytes), "s0*128 + s1*64 + 1024");
  EXPECT_TRUE(sym.guards->guards().empty());
  // At one call's sizes the plan is numbers, and no two live buffers meet.
  specialize(bs, plan, {{"s0", 20}, {"s1", 40}});
  EXPECT_EQ(plan.offsets[4], 20 * 128 + 1024);
  EXPECT_EQ(plan.arena_bytes, 20 * 128 + 40 * 64 + 1024);
  for (size_t a = 0; a < bs.size(); ++a)
    for (size_t b = a + 1; b < bs.size(); ++b) {
      bool live = bs[a].def <= bs[b].last_use && bs[b].def <= bs[a].last_use && plan.reused[b] != int(a);
      bool apart = plan.offsets[a] + bs[a].bytes <= plan.offsets[b] || plan.offsets[b] + bs[b].bytes <= plan.offsets[a];
      EXPECT_TRUE(!live || apart) << bs[a].name << " and " << bs[b].name;
    }
}

}  // namespace
}  // namespace coil::sched
