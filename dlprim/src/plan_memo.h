// Launch plans remembered per exact problem. Choosing a GEMM tile config or a convolution path
// formats and parses a dozen config strings and builds the tuning keys: about 50k host
// instructions per GEMM call (two per convolution), more than the launch itself. The choice for
// one problem changes only with plan_stamp() (reset decisions, forcing variables), which every
// lookup compares, and with tune_stamp() (a deferred tuning's builds finished or its decision landed:
// plans made on its fallback are made again).
//
// A caller sizes a problem's workspace with one lookup and runs it with a second, and a deferred
// tuning may land in between (on another thread, or at the second lookup itself): a plan made again for
// tune_stamp() alone replaces the remembered one only where `accept(old, new)` says the new one fits
// the workspace sized for the old (never more bytes, scratch regions last); else the problem keeps its
// plan for this process (the next one loads the decision from the disk cache).
#pragma once
#include <dlprim/autotune.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace dlprim {
namespace detail {

template <size_t N, class Value>
class PlanMemo {
public:
  using Key = std::array<int64_t, N>;

  // The remembered value for `key`, else make() (remembered for next time).
  template <class Make>
  Value get(const Key& key, Make&& make) {
    return get(key, make, [](const Value&, const Value&) { return true; });
  }
  template <class Make, class Accept>
  Value get(const Key& key, Make&& make, Accept&& accept) {
    uint64_t stamp = plan_stamp(), tune = tune_stamp();
    bool had = false;
    Value old{};
    {
      std::lock_guard<std::mutex> lock(m_);
      auto it = map_.find(key);
      if (it != map_.end() && it->second.stamp == stamp) {
        if (it->second.tune == tune) return it->second.value;
        had = true;
        old = it->second.value;
      }
    }
    Value v = make();  // may tune (seconds): not under the lock
    if (had && !accept(old, v)) v = old;
    std::lock_guard<std::mutex> lock(m_);
    if (map_.size() >= kMaxEntries) map_.clear();  // programs with ever-new shapes stay bounded
    map_[key] = Entry{stamp, tune, v};
    return v;
  }

private:
  static constexpr size_t kMaxEntries = 4096;
  struct Entry {
    uint64_t stamp, tune;
    Value value;
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      uint64_t h = 1469598103934665603ull;
      for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
      return static_cast<size_t>(h);
    }
  };
  std::mutex m_;
  std::unordered_map<Key, Entry, Hash> map_;
};

// A context as a key element.
inline int64_t key_of(const Context& ctx) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(ctx.context())); }

} // namespace detail
} // namespace dlprim
