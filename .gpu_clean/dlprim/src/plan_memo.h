// Launch plans remembered per exact problem. Choosing a GEMM tile config or a convolution path
// formats and parses a dozen config strings and builds the tuning keys: about 50k host
// instructions per GEMM call (two per convolution), more than the launch itself. The choice for
// one problem changes only with plan_stamp() (reset decisions, forcing variables), which every
// lookup compares.
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
    uint64_t stamp = plan_stamp();
    {
      std::lock_guard<std::mutex> lock(m_);
      auto it = map_.find(key);
      if (it != map_.end() && it->second.stamp == stamp) return it->second.value;
    }
    Value v = make();  // may tune (seconds): not under the lock
    std::lock_guard<std::mutex> lock(m_);
    if (map_.size() >= kMaxEntries) map_.clear();  // programs with ever-new shapes stay bounded
    map_[key] = Entry{stamp, v};
    return v;
  }

private:
  static constexpr size_t kMaxEntries = 4096;
  struct Entry {
    uint64_t stamp;
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
