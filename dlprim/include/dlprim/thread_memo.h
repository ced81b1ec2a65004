// A per-thread memo in front of a global, mutex-guarded cache: the per-op hot paths (kernel lookups, the
// allocator's device cache) find their entry without the global lock and the map's key comparisons.
//
// Safe only under two rules, which every user keeps:
//  - the global cache never frees an entry (the memo keeps a raw pointer to it, in every thread);
//  - a hit compares the whole key, kept by value in the slot (text as a MemoName copy, never a pointer into
//    the caller's memory): a stale or colliding slot can only miss, never return another key's entry.
// Slots are 2-way sets (a set by the key's hash, the older way replaced on a miss), so two keys that
// share a set do not evict each other on every call. Each thread has its own slots: no locking.
// In include/ (not next to plan_memo.h) because csrc's allocator uses it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

namespace dlprim {

// Text as part of a key, by value: a zero-padded copy of up to Cap - 1 chars, compared and hashed word by
// word. A longer text is marked as such and equals nothing (it always misses: correct, only slower).
// Callers pass string literals, but a pointer key would still need its text checked against the entry on
// every hit (a pointer can be reused for other text); the copy (strlen + memcpy of ~20 chars) costs the same
// within callgrind's noise at layer_norm (typed_kernel) and needs no key stored in the entry.
template <size_t Cap = 32>
struct MemoName {
  static_assert(Cap % 8 == 0 && Cap >= 8, "MemoName: Cap is a multiple of 8");
  uint64_t words[Cap / 8] = {};

  constexpr MemoName() = default;
  explicit MemoName(const char* text) {
    size_t n = std::strlen(text);
    if (n < Cap)
      std::memcpy(words, text, n);
    else
      std::memset(words, 0xff, Cap);  // the last byte of a text that fits is always 0
  }
  bool fits() const { return reinterpret_cast<const unsigned char*>(words)[Cap - 1] == 0; }
  bool operator==(const MemoName& o) const { return fits() && std::memcmp(words, o.words, Cap) == 0; }
  bool operator!=(const MemoName& o) const { return !(*this == o); }
  uint64_t hash() const {
    uint64_t h = 0;
    for (uint64_t w : words) h = (h ^ w) * 0x100000001b3ull;
    return h;
  }
};

// Hashes integers, enums, pointers, tuple-likes (std::tuple, std::pair, std::array) of them, and
// anything with a hash() member (MemoName).
struct MemoHash {
  template <class V>
  size_t operator()(const V& v) const {
    uint64_t h = 0xcbf29ce484222325ull;
    add(h, v);
    return static_cast<size_t>(h);
  }

private:
  template <class V, class = void>
  struct TupleLike : std::false_type {};
  template <class V>
  struct TupleLike<V, std::void_t<decltype(std::tuple_size<V>::value)>> : std::true_type {};

  static void mix(uint64_t& h, uint64_t x) { h = (h ^ x) * 0x100000001b3ull; }
  template <class V>
  static void add(uint64_t& h, const V& v) {
    if constexpr (std::is_integral_v<V> || std::is_enum_v<V>)
      mix(h, static_cast<uint64_t>(v));
    else if constexpr (std::is_pointer_v<V>)
      mix(h, reinterpret_cast<uintptr_t>(v));
    else if constexpr (TupleLike<V>::value)
      std::apply([&h](const auto&... e) { (add(h, e), ...); }, v);
    else
      mix(h, v.hash());
  }
};

// N slots of (Key, never-freed T*) for one call site: `thread_local ThreadMemo<Key, T, N> memo;`
// (trivially destructible and constant-initialised when Key is, so a thread_local costs no guard).
template <class Key, class T, size_t N, class Hash = MemoHash>
class ThreadMemo {
  static constexpr size_t kWays = N > 1 ? 2 : 1;
  static constexpr size_t kSets = N / kWays;
  static_assert(N % kWays == 0, "ThreadMemo: N is 1 or even");

public:
  // The entry remembered for `key`, else *make() (the global cache's lookup, under its lock; it returns a
  // never-freed T*), remembered for next time.
  template <class Make>
  T& get(const Key& key, Make&& make) {
    const size_t h = spread(Hash()(key));
    const size_t set = h % kSets;
    Slot* ways = &slots_[set * kWays];
    for (size_t w = 0; w < kWays; ++w)
      if (ways[w].value && ways[w].hash == h && ways[w].key == key) return *ways[w].value;
    T* value = make();
    Slot& s = ways[next_[set]];
    next_[set] = static_cast<unsigned char>((next_[set] + 1) % kWays);
    s.key = key;
    s.hash = h;
    s.value = value;
    return *value;
  }

private:
  // Callers' hashes may vary in their high bits only (pointers, h * 31 + x): fold them into the low ones.
  static size_t spread(size_t h) {
    uint64_t x = h;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<size_t>(x);
  }
  struct Slot {
    Key key{};
    size_t hash = 0;
    T* value = nullptr;
  };
  Slot slots_[N]{};
  unsigned char next_[kSets]{};
};

} // namespace dlprim
