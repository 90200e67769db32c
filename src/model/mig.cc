#include "model/mig.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace tessera::model {

void Normalize(MigLayout& layout) {
  std::sort(layout.instances.begin(), layout.instances.end(),
            [](const MigInstance& a, const MigInstance& b) {
              return a.start != b.start ? a.start < b.start : a.profile < b.profile;
            });
}

Expected<void> ValidateLayout(const GpuModel& model, const MigLayout& layout) {
  if (!model.mig_capable()) return Fail("{} does not support MIG", model.name);
  std::vector<int> count(model.mig_profiles.size(), 0);
  std::vector<bool> used(model.mig_memory_slices, false);
  int compute = 0, media = 0;
  for (const MigInstance& inst : layout.instances) {
    if (inst.profile < 0 || static_cast<size_t>(inst.profile) >= model.mig_profiles.size()) {
      return Fail("{}: no MIG profile #{}", model.name, inst.profile);
    }
    const MigProfile& p = model.mig_profiles[inst.profile];
    if (std::find(p.starts.begin(), p.starts.end(), inst.start) == p.starts.end()) {
      return Fail("{}: {} cannot start at memory slice {}", model.name, p.name, inst.start);
    }
    for (int s = inst.start; s < inst.start + p.memory_slices; ++s) {
      if (used[s]) {
        return Fail("{}: {}@{} overlaps memory slice {} of another instance", model.name, p.name,
                    inst.start, s);
      }
      used[s] = true;
    }
    if (++count[inst.profile] > p.max_count) {
      return Fail("{}: more than {} instances of {}", model.name, p.max_count, p.name);
    }
    if (p.media_extensions && ++media > 1) {
      return Fail("{}: only one instance may have media extensions", model.name);
    }
    compute += p.compute_slices;
  }
  if (compute > model.mig_compute_slices) {
    return Fail("{}: layout needs {} compute slices, the GPU has {}", model.name, compute,
                model.mig_compute_slices);
  }
  return {};
}

namespace {

struct Enumerator {
  const GpuModel& model;
  std::vector<MigInstance> candidates;
  std::vector<MigLayout> maximal;

  bool Fits(MigLayout& layout, const MigInstance& inst) {
    layout.instances.push_back(inst);
    const bool ok = ValidateLayout(model, layout).has_value();
    layout.instances.pop_back();
    return ok;
  }

  // Builds layouts as increasing subsequences of `candidates`, so each set is visited once.
  void Extend(MigLayout& layout, size_t from) {
    bool extended = false;
    for (size_t i = from; i < candidates.size(); ++i) {
      if (!Fits(layout, candidates[i])) continue;
      layout.instances.push_back(candidates[i]);
      Extend(layout, i + 1);
      layout.instances.pop_back();
    }
    if (layout.instances.empty()) return;
    for (const MigInstance& c : candidates) {
      if (Fits(layout, c)) {
        extended = true;
        break;
      }
    }
    if (!extended) {
      MigLayout copy = layout;
      Normalize(copy);
      maximal.push_back(std::move(copy));
    }
  }
};

}  // namespace

std::vector<MigLayout> ValidLayouts(const GpuModel& model, const std::vector<int>& profiles) {
  Enumerator e{model, {}, {}};
  for (int p : profiles) {
    for (int s : model.mig_profiles[p].starts) e.candidates.push_back({p, s});
  }
  MigLayout empty;
  e.Extend(empty, 0);
  std::sort(e.maximal.begin(), e.maximal.end());
  e.maximal.erase(std::unique(e.maximal.begin(), e.maximal.end()), e.maximal.end());
  return e.maximal;
}

const std::vector<MigLayout>& ValidLayouts(const GpuModel& model) {
  static const std::vector<std::vector<MigLayout>> cache = [] {
    std::vector<std::vector<MigLayout>> all;
    for (const GpuModel& m : AllGpuModels()) {
      std::vector<int> plain;
      for (size_t i = 0; i < m.mig_profiles.size(); ++i) {
        if (!m.mig_profiles[i].media_extensions) plain.push_back(static_cast<int>(i));
      }
      all.push_back(ValidLayouts(m, plain));
    }
    return all;
  }();
  return cache[model.id];
}

std::vector<MigLayout> DistinctByProfiles(const std::vector<MigLayout>& layouts) {
  std::vector<MigLayout> out;
  std::vector<std::vector<int>> seen;
  for (const MigLayout& l : layouts) {
    std::vector<int> key;
    for (const MigInstance& i : l.instances) key.push_back(i.profile);
    std::sort(key.begin(), key.end());
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(std::move(key));
    out.push_back(l);
  }
  return out;
}

std::string LayoutToString(const GpuModel& model, const MigLayout& layout) {
  std::string out;
  for (const MigInstance& i : layout.instances) {
    if (!out.empty()) out += ',';
    out += model.mig_profiles[i.profile].name + "@" + std::to_string(i.start);
  }
  return out;
}

Expected<MigLayout> ParseLayout(const GpuModel& model, const std::string& text) {
  MigLayout layout;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t at = item.find('@');
    const std::string name = item.substr(0, at);
    const std::optional<int> profile = model.FindProfile(name);
    if (!profile) return Fail("layout '{}': {} has no MIG profile '{}'", text, model.name, name);
    int start = -1;
    if (at != std::string::npos) {
      try {
        start = std::stoi(item.substr(at + 1));
      } catch (...) {
        return Fail("layout '{}': bad start slice in '{}'", text, item);
      }
    } else {
      for (int s : model.mig_profiles[*profile].starts) {
        layout.instances.push_back({*profile, s});
        const bool ok = ValidateLayout(model, layout).has_value();
        layout.instances.pop_back();
        if (ok) {
          start = s;
          break;
        }
      }
      if (start < 0) return Fail("layout '{}': no room left for {}", text, name);
    }
    layout.instances.push_back({*profile, start});
  }
  if (layout.instances.empty()) return Fail("layout '{}' is empty", text);
  Normalize(layout);
  if (auto ok = ValidateLayout(model, layout); !ok) return std::unexpected(ok.error());
  return layout;
}

}  // namespace tessera::model
