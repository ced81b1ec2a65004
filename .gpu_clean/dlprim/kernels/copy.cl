// Dense byte copy: 16-byte vectors for the body, single bytes for the unaligned head and tail
// (source and destination share their address mod 16, so one head length fits both).
// Work-items 0..15 also move one head byte and one tail byte each.
__kernel void copy_bytes(__global uchar* dst, ulong dst_off, __global const uchar* src, ulong src_off,
                         ulong n_vec, uint head, uint tail) {
  size_t i = get_global_id(0);
  __global uchar* d = dst + dst_off;
  __global const uchar* s = src + src_off;
  if (i < n_vec) ((__global uint4*)(d + head))[i] = ((__global const uint4*)(s + head))[i];
  if (i < head) d[i] = s[i];
  if (i < tail) {
    ulong j = head + n_vec * 16 + i;
    d[j] = s[j];
  }
}
