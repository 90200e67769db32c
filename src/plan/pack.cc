#include "plan/pack.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "base/error.h"
#include "policy/flow/mip.h"

namespace tessera::plan {
namespace {

bool Holds(const Counts& layout, const Counts& v) {
  for (size_t p = 0; p < v.size(); ++p) {
    if (v[p] > layout[p]) return false;
  }
  return true;
}

int FirstHolding(const std::vector<Counts>& layouts, const Counts& v) {
  for (size_t l = 0; l < layouts.size(); ++l) {
    if (Holds(layouts[l], v)) return static_cast<int>(l);
  }
  return -1;
}

bool Empty(const Counts& load) {
  return std::all_of(load.begin(), load.end(), [](int c) { return c == 0; });
}

// The greedy cut: each GPU takes the largest profiles first (`order`) as long as some layout
// holds them, and the same GPU repeats while the load lasts. One step: `v` becomes the next
// GPU's instances, `load` loses them `repeat` times, and the repeat is returned.
int GreedyStep(const std::vector<Counts>& layouts, const std::vector<int>& order, Counts& load,
               Counts& v) {
  v.assign(load.size(), 0);
  for (int prof : order) {
    const size_t i = static_cast<size_t>(prof);
    while (v[i] < load[i]) {
      ++v[i];
      if (FirstHolding(layouts, v) < 0) {
        --v[i];
        break;
      }
    }
  }
  int repeat = std::numeric_limits<int>::max();
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] > 0) repeat = std::min(repeat, load[i] / v[i]);
  }
  TESSERA_CHECK(repeat > 0 && repeat < std::numeric_limits<int>::max());
  for (size_t i = 0; i < v.size(); ++i) load[i] -= v[i] * repeat;
  return repeat;
}

struct Pattern {
  Counts used;
  int gpus = 0;
};
std::vector<Pattern> GreedyPatterns(const std::vector<Counts>& layouts,
                                    const std::vector<int>& order, Counts load) {
  std::vector<Pattern> out;
  while (!Empty(load)) {
    Counts v;
    const int repeat = GreedyStep(layouts, order, load, v);
    out.push_back({std::move(v), repeat});
  }
  return out;
}

// The fewest GPUs whose layouts hold `load` (a cutting-stock integer program over the maximal
// layouts, CBC within 1 s): GPUs per layout, empty when CBC finds nothing.
std::vector<int> FewestLayouts(const std::vector<Counts>& layouts, const Counts& load) {
  flow::IntegerProgram ip;
  ip.cost.assign(layouts.size(), 1);
  for (size_t prof = 0; prof < load.size(); ++prof) {
    if (load[prof] == 0) continue;
    flow::LinearRow row{
        {}, static_cast<double>(load[prof]), std::numeric_limits<double>::infinity()};
    for (size_t l = 0; l < layouts.size(); ++l) {
      if (layouts[l][prof] > 0)
        row.terms.push_back({static_cast<int>(l), double(layouts[l][prof])});
    }
    ip.rows.push_back(std::move(row));
  }
  ip.time_limit_s = 1;
  const flow::MipResult r = flow::SolveMinimum(ip);
  if (r.status != flow::Status::kOptimal) return {};
  std::vector<int> cut;
  for (double v : r.values) cut.push_back(static_cast<int>(std::llround(v)));
  return cut;
}

}  // namespace

size_t MigPacker::Hash::operator()(const Counts& c) const {
  size_t h = 0;
  for (int v : c) h = h * 1'000'003 + static_cast<size_t>(v);
  return h;
}

MigPacker::MigPacker(const Problem& p, int gpu) : layouts_(p.layouts[static_cast<size_t>(gpu)]) {
  const model::GpuModel& m = model::GetGpuModel(p.gpus[static_cast<size_t>(gpu)].model);
  for (const model::MigProfile& prof : m.mig_profiles) {
    compute_.push_back(prof.compute_slices);
    memory_.push_back(prof.memory_slices);
  }
  compute_total_ = std::max(1, m.mig_compute_slices);
  memory_total_ = std::max(1, m.mig_memory_slices);
  most_.assign(compute_.size(), 0);
  holding_.assign(compute_.size(), {});
  for (size_t l = 0; l < layouts_.size(); ++l) {
    for (size_t prof = 0; prof < compute_.size(); ++prof) {
      if (layouts_[l][prof] == 0) continue;
      most_[prof] = std::max(most_[prof], layouts_[l][prof]);
      holding_[prof].push_back(static_cast<int>(l));
    }
  }
  order_.resize(compute_.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
    return compute_[static_cast<size_t>(a)] > compute_[static_cast<size_t>(b)];
  });
}

bool MigPacker::Small(const Counts& load) const {
  double states = 1;
  for (int c : load) states *= c + 1;
  return states <= kExactLoads;
}

int MigPacker::LowerBound(const Counts& load) const {
  int bound = 0;
  int64_t compute = 0, memory = 0;
  for (size_t p = 0; p < load.size(); ++p) {
    if (load[p] == 0) continue;
    bound = std::max(bound, (load[p] + most_[p] - 1) / most_[p]);
    compute += int64_t{load[p]} * compute_[p];
    memory += int64_t{load[p]} * memory_[p];
  }
  bound = std::max(bound, static_cast<int>((compute + compute_total_ - 1) / compute_total_));
  return std::max(bound, static_cast<int>((memory + memory_total_ - 1) / memory_total_));
}

MigPacker::Best MigPacker::Search(const Counts& load) {
  if (auto it = memo_.find(load); it != memo_.end()) return it->second;
  Best best;
  if (!Empty(load)) {
    best.gpus = GreedyGpus(load);
    const int bound = LowerBound(load);
    // Some GPU holds an instance of `branch`: only the layouts holding it need a try.
    size_t branch = load.size();
    for (size_t p = 0; p < load.size(); ++p) {
      if (load[p] > 0 && (branch == load.size() || holding_[p].size() < holding_[branch].size())) {
        branch = p;
      }
    }
    Counts rest(load.size());
    for (int l : holding_[branch]) {
      if (best.gpus == bound) break;
      for (size_t p = 0; p < load.size(); ++p) {
        rest[p] = std::max(0, load[p] - layouts_[static_cast<size_t>(l)][p]);
      }
      if (1 + LowerBound(rest) >= best.gpus) continue;
      const int gpus = 1 + Search(rest).gpus;
      if (gpus < best.gpus) best = {gpus, l};
    }
  }
  memo_.emplace(load, best);
  return best;
}

int MigPacker::Fewest(const Counts& load) {
  if (Small(load)) return Search(load).gpus;
  return GreedyGpus(load);
}

int MigPacker::GreedyGpus(const Counts& load) {
  // The greedy cut's count without its patterns: Search asks it of every sub-load it memoises,
  // so it reuses two scratch rows instead of building a vector of patterns per call.
  greedy_load_ = load;
  int gpus = 0;
  while (!Empty(greedy_load_)) gpus += GreedyStep(layouts_, order_, greedy_load_, greedy_used_);
  return gpus;
}

std::vector<std::pair<int, Counts>> MigPacker::Greedy(Counts load) const {
  std::vector<std::pair<int, Counts>> cut;
  for (const Pattern& pat : GreedyPatterns(layouts_, order_, std::move(load))) {
    const int layout = FirstHolding(layouts_, pat.used);
    for (int i = 0; i < pat.gpus; ++i) cut.emplace_back(layout, pat.used);
  }
  return cut;
}

std::vector<std::pair<int, Counts>> MigPacker::Cut(const Counts& load) {
  std::vector<std::pair<int, Counts>> cut;
  if (Empty(load)) return cut;
  if (!Small(load)) {
    cut = Greedy(load);
    const std::vector<int> fewest = FewestLayouts(layouts_, load);
    if (fewest.empty() ||
        std::accumulate(fewest.begin(), fewest.end(), 0) >= static_cast<int>(cut.size())) {
      return cut;
    }
    cut.clear();
    for (size_t l = 0; l < fewest.size(); ++l) {
      for (int i = 0; i < fewest[l]; ++i) cut.emplace_back(static_cast<int>(l), layouts_[l]);
    }
    return cut;
  }
  Counts left = load;
  while (!Empty(left)) {
    const Best best = Search(left);
    if (best.layout < 0) {
      for (auto& gpu : Greedy(left)) cut.push_back(std::move(gpu));
      break;
    }
    Counts used(left.size());
    for (size_t p = 0; p < left.size(); ++p) {
      used[p] = std::min(left[p], layouts_[static_cast<size_t>(best.layout)][p]);
      left[p] -= used[p];
    }
    cut.emplace_back(best.layout, std::move(used));
  }
  return cut;
}

}  // namespace tessera::plan
