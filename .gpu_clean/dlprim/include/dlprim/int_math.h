// Integer helpers for launch geometry and tile sizes.
#pragma once
#include <type_traits>

namespace dlprim {

// ceil(a / b) for a >= 0, b > 0.
template <class A, class B>
constexpr std::common_type_t<A, B> ceil_div(A a, B b) {
  using C = std::common_type_t<A, B>;
  return (static_cast<C>(a) + static_cast<C>(b) - 1) / static_cast<C>(b);
}

// a rounded up to a multiple of b.
template <class A, class B>
constexpr std::common_type_t<A, B> round_up(A a, B b) {
  return ceil_div(a, b) * static_cast<std::common_type_t<A, B>>(b);
}

} // namespace dlprim
