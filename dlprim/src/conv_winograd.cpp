// Winograd F(4x4, 3x3) path for 3x3 stride-1 undilated ungrouped convolutions: filter and input
// transforms (kernels/conv_winograd.cl), 36 batched GEMMs through gemm() (so the tuned tiled
// kernel does the products), and the output transform with the bias. The input gradient of
// such a convolution is itself one (flipped, transposed weights; padding 2 - p), so it runs
// through the same code; the weight gradient transforms x and dy tiles and reduces over the
// tiles in the 36 GEMMs. Whether it is used is decided by timing (conv_implicit.cpp for the
// forward, the *_chosen functions below for the gradients).
#include <dlprim/env.h>
#include <dlprim/autotune.h>
#include <dlprim/embedded.h>

#include "conv_internal.h"
#include "plan_memo.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>

namespace dlprim {
namespace detail {

namespace {

constexpr int64_t kPoints = 36;  // (4 + 3 - 1)^2 transformed points per tile

uint64_t align_up(uint64_t v) { return (v + 255) / 256 * 256; }

LockedKernel& wino_kernel(const Context& ctx, DType dtype, const char* name) {
  LockedKernel& slot = kernel_slot(ctx, std::string("conv_winograd|") + dtype_name(dtype) + "|" + name);
  std::lock_guard<std::mutex> lock(slot.m);
  if (!slot.k) slot.k = create_kernel(ctx.program(gemm_program_head(dtype) + kernel_source("conv_winograd")), name);
  return slot;
}

// Layout of the workspace: U, then per image chunk V and M, then the GEMM's own scratch.
struct Layout {
  int64_t tiles_h = 0, tiles_w = 0, images = 1;
  uint64_t u_bytes = 0, v_bytes = 0, m_bytes = 0, gemm_bytes = 0;
  uint64_t total() const { return align_up(u_bytes) + align_up(v_bytes) + align_up(m_bytes) + gemm_bytes; }
};

// The transforms amplify the products' rounding: TF32 products gave F(4x4, 3x3) results beyond a TF32
// convolution's error (H200), so Winograd keeps fp32 accuracy (3xTF32 on an engine) even where TF32 is
// allowed, and the tuner weighs it against the TF32 im2col path.
Fp32Math winograd_fp32_math(Fp32Math requested) { return requested == Fp32Math::Tf32 ? Fp32Math::Exact : requested; }

int64_t tiles(const WinoConv& c) { return ((c.OH + 3) / 4) * ((c.OW + 3) / 4); }

// The 36 products of one chunk of `nb` images: M[a] = U[a] @ V[a].
Gemm chunk_gemm(const WinoConv& c, DType acc, int64_t nb, cl_mem ws, uint64_t u_off, uint64_t v_off, uint64_t m_off) {
  int64_t P = nb * tiles(c);
  Gemm g;
  g.dtype = acc;
  g.fp32_math = c.fp32_math;
  g.M = c.Cout;
  g.N = P;
  g.K = c.Cin;
  g.batch = kPoints;
  g.a = {ws, u_off, c.Cin, 1, c.Cout * c.Cin, 0, 0};
  g.b = {ws, v_off, P, 1, c.Cin * P, 0, 0};
  g.c = {ws, m_off, P, 1, c.Cout * P, 0, 0};
  return g;
}

// The weight gradient's 36 products of one chunk: M[a] (+)= D[a] @ V[a]^T, reducing over tiles.
Gemm weight_chunk_gemm(const WinoConv& c, DType acc, int64_t nb, bool accumulate, cl_mem ws, uint64_t m_off,
                       uint64_t v_off, uint64_t d_off) {
  int64_t P = nb * tiles(c);
  Gemm g;
  g.dtype = acc;
  g.fp32_math = c.fp32_math;
  g.M = c.Cout;
  g.N = c.Cin;
  g.K = P;
  g.batch = kPoints;
  g.a = {ws, d_off, P, 1, c.Cout * P, 0, 0};
  g.b = {ws, v_off, 1, P, c.Cin * P, 0, 0};
  g.c = {ws, m_off, c.Cin, 1, c.Cout * c.Cin, 0, 0};
  if (accumulate) {
    g.has_d = true;
    g.beta = 1;
    g.d = g.c;
  }
  return g;
}

// `weight_grad`: the layout of the weight gradient (U holds its transformed result, the chunk's
// M the transformed output gradient).
Layout layout_of(const Context& ctx, const WinoConv& c, DType dtype, bool weight_grad = false) {
  DType acc = compute_dtype(dtype);
  size_t es = dtype_size(acc);
  Layout l;
  l.tiles_h = (c.OH + 3) / 4;
  l.tiles_w = (c.OW + 3) / 4;
  uint64_t per_image = static_cast<uint64_t>(kPoints) * (c.Cin + c.Cout) * tiles(c) * es;
  uint64_t budget = std::min<uint64_t>(ctx.info().is_cpu ? (64ull << 20) : (512ull << 20), ctx.info().max_alloc_size / 4);
  l.images = std::max<int64_t>(1, std::min<int64_t>(c.N, per_image ? static_cast<int64_t>(budget / per_image) : c.N));
  uint64_t P = static_cast<uint64_t>(l.images) * tiles(c);
  l.u_bytes = static_cast<uint64_t>(kPoints) * c.Cout * c.Cin * es;
  l.v_bytes = static_cast<uint64_t>(kPoints) * c.Cin * P * es;
  l.m_bytes = static_cast<uint64_t>(kPoints) * c.Cout * P * es;
  for (int64_t nb : {l.images, c.N % l.images}) {
    if (nb <= 0) continue;
    Gemm g = weight_grad ? weight_chunk_gemm(c, acc, nb, false, nullptr, 0, 0, 0) : chunk_gemm(c, acc, nb, nullptr, 0, 0, 0);
    l.gemm_bytes = std::max(l.gemm_bytes, gemm_workspace_bytes(ctx, g));
  }
  return l;
}

// V = B^T d B of the input tiles of images [b0, b0 + P / tiles).
void launch_input(const Context& ctx, cl_command_queue q, const WinoConv& c, const Layout& l, DType dtype,
                  const ConvTensor& x, int64_t b0, int64_t P, cl_mem ws, uint64_t v_off) {
  if (c.Cin == 0) return;
  LockedKernel& k = wino_kernel(ctx, dtype, "wino_input");
  std::lock_guard<std::mutex> lock(k.m);
  KernelArgs a(k.k);
  a.add<cl_int>(static_cast<int>(c.Cin)).add<cl_int>(static_cast<int>(c.H)).add<cl_int>(static_cast<int>(c.W));
  a.add<cl_int>(static_cast<int>(l.tiles_h)).add<cl_int>(static_cast<int>(l.tiles_w));
  a.add<cl_int>(static_cast<int>(c.ph)).add<cl_int>(static_cast<int>(c.pw)).add<cl_int>(static_cast<int>(P));
  a.add(x.mem).add<cl_ulong>(x.offset + b0 * x.sn).add<cl_long>(x.sn).add<cl_long>(x.sc).add<cl_long>(x.sh);
  a.add<cl_long>(x.sw).add(ws).add<cl_ulong>(v_off);
  launch_1d(q, k.k, static_cast<uint64_t>(P) * c.Cin, ctx.work_group_size(128));
}

const char* env_winograd() { return env_value("PYTORCH_OCL_CONV_WINOGRAD"); }

} // namespace

bool winograd_eligible(const ConvShape& s) {
  return s.KH == 3 && s.KW == 3 && s.sh == 1 && s.sw == 1 && s.dh == 1 && s.dw == 1 && s.groups == 1 && s.C > 0 &&
         s.K > 0 && s.OH > 0 && s.OW > 0;
}

int winograd_env() {
  const char* e = env_winograd();
  if (!e || !*e) return -1;
  return std::string(e) == "0" ? 0 : (std::string(e) == "1" ? 1 : -1);
}

WinoConv winograd_forward_conv(const ConvShape& s) {
  WinoConv c;
  c.fp32_math = winograd_fp32_math(s.fp32_math);
  c.N = s.N;
  c.Cin = s.C;
  c.H = s.H;
  c.W = s.W;
  c.Cout = s.K;
  c.OH = s.OH;
  c.OW = s.OW;
  c.ph = s.ph;
  c.pw = s.pw;
  c.w_so = s.C * 9;
  c.w_si = 9;
  c.flip = false;
  return c;
}

// dx = conv(dy, w') with w'[c, k] = w[k, c] rotated by 180 degrees and padding 2 - p (which
// may be negative: the windows then start inside dy): its output size OH + 2 (2 - p) - 2 is
// H, since OH = H + 2p - 2.
WinoConv winograd_backward_data_conv(const ConvShape& s) {
  WinoConv c;
  c.fp32_math = winograd_fp32_math(s.fp32_math);
  c.N = s.N;
  c.Cin = s.K;
  c.H = s.OH;
  c.W = s.OW;
  c.Cout = s.C;
  c.OH = s.H;
  c.OW = s.W;
  c.ph = 2 - s.ph;
  c.pw = 2 - s.pw;
  c.w_so = 9;
  c.w_si = s.C * 9;
  c.flip = true;
  return c;
}

uint64_t winograd_workspace(const Context& ctx, const WinoConv& c, DType dtype) {
  return layout_of(ctx, c, dtype).total();
}

void winograd_run(const Context& ctx, cl_command_queue q, const WinoConv& c, DType dtype, const ConvTensor& x,
                  const ConvBuffer& w, const ConvBuffer& bias, const ConvTensor& y, cl_mem ws, uint64_t ws_offset) {
  if (c.N == 0 || c.Cout == 0 || c.OH <= 0 || c.OW <= 0) return;
  const int64_t lim = 0x7fffffff;
  Layout l = layout_of(ctx, c, dtype);
  if (c.Cout * c.Cin > lim || static_cast<int64_t>(l.images) * tiles(c) > lim)
    throw Error("conv2d: too large for the Winograd path");
  DType acc = compute_dtype(dtype);
  size_t es = dtype_size(acc);
  uint64_t u_off = ws_offset, v_off = u_off + align_up(l.u_bytes), m_off = v_off + align_up(l.v_bytes);
  uint64_t g_off = m_off + align_up(l.m_bytes);
  size_t wg = ctx.work_group_size(128);
  if (c.Cin > 0) {
    LockedKernel& k = wino_kernel(ctx, dtype, "wino_filter");
    std::lock_guard<std::mutex> lock(k.m);
    KernelArgs a(k.k);
    a.add<cl_int>(static_cast<int>(c.Cout)).add<cl_int>(static_cast<int>(c.Cin));
    a.add(w.mem).add<cl_ulong>(w.offset).add<cl_long>(c.w_so).add<cl_long>(c.w_si).add<cl_int>(c.flip ? 1 : 0);
    a.add(ws).add<cl_ulong>(u_off / es);
    launch_1d(q, k.k, static_cast<uint64_t>(c.Cout) * c.Cin, wg);
  }
  for (int64_t b0 = 0; b0 < c.N; b0 += l.images) {
    int64_t nb = std::min(l.images, c.N - b0);
    int64_t P = nb * tiles(c);
    launch_input(ctx, q, c, l, dtype, x, b0, P, ws, v_off / es);
    Gemm g = chunk_gemm(c, acc, nb, ws, u_off / es, v_off / es, m_off / es);
    if (c.Cin == 0) g.k_outer = 0;  // no input channels: zeros (plus the bias)
    gemm(ctx, q, g, ws, g_off);
    {
      LockedKernel& k = wino_kernel(ctx, dtype, "wino_output");
      std::lock_guard<std::mutex> lock(k.m);
      KernelArgs a(k.k);
      a.add<cl_int>(static_cast<int>(c.Cout)).add<cl_int>(static_cast<int>(c.OH)).add<cl_int>(static_cast<int>(c.OW));
      a.add<cl_int>(static_cast<int>(l.tiles_h)).add<cl_int>(static_cast<int>(l.tiles_w)).add<cl_int>(static_cast<int>(P));
      a.add(ws).add<cl_ulong>(m_off / es);
      a.add(bias.mem ? bias.mem : ws).add<cl_ulong>(bias.mem ? bias.offset : 0).add<cl_int>(bias.mem ? 1 : 0);
      a.add(y.mem).add<cl_ulong>(y.offset + b0 * y.sn).add<cl_long>(y.sn).add<cl_long>(y.sc).add<cl_long>(y.sh);
      a.add<cl_long>(y.sw);
      launch_1d(q, k.k, static_cast<uint64_t>(P) * c.Cout, wg);
    }
  }
}

uint64_t winograd_weight_workspace(const Context& ctx, const ConvShape& s, DType dtype) {
  return layout_of(ctx, winograd_forward_conv(s), dtype, true).total();
}

void winograd_backward_weight(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype,
                              const ConvTensor& x, const ConvTensor& dy, const ConvBuffer& dw, cl_mem ws,
                              uint64_t ws_offset) {
  WinoConv c = winograd_forward_conv(s);
  if (c.Cout == 0 || c.Cin == 0) return;
  const int64_t lim = 0x7fffffff;
  Layout l = layout_of(ctx, c, dtype, true);
  if (c.Cout * c.Cin > lim || static_cast<int64_t>(l.images) * tiles(c) > lim)
    throw Error("conv2d: too large for the Winograd path");
  DType acc = compute_dtype(dtype);
  size_t es = dtype_size(acc);
  // U holds the transformed weight gradient, V the input tiles, M the output-gradient tiles.
  uint64_t u_off = ws_offset, v_off = u_off + align_up(l.u_bytes), m_off = v_off + align_up(l.v_bytes);
  uint64_t g_off = m_off + align_up(l.m_bytes);
  size_t wg = ctx.work_group_size(128);
  if (c.N == 0) {  // an empty sum: zeros
    Gemm g = weight_chunk_gemm(c, acc, 1, false, ws, u_off / es, v_off / es, m_off / es);
    g.k_outer = 0;
    gemm(ctx, q, g, ws, g_off);
  }
  for (int64_t b0 = 0; b0 < c.N; b0 += l.images) {
    int64_t nb = std::min(l.images, c.N - b0);
    int64_t P = nb * tiles(c);
    launch_input(ctx, q, c, l, dtype, x, b0, P, ws, v_off / es);
    {
      LockedKernel& k = wino_kernel(ctx, dtype, "wino_grad_output");
      std::lock_guard<std::mutex> lock(k.m);
      KernelArgs a(k.k);
      a.add<cl_int>(static_cast<int>(c.Cout)).add<cl_int>(static_cast<int>(c.OH)).add<cl_int>(static_cast<int>(c.OW));
      a.add<cl_int>(static_cast<int>(l.tiles_h)).add<cl_int>(static_cast<int>(l.tiles_w)).add<cl_int>(static_cast<int>(P));
      a.add(dy.mem).add<cl_ulong>(dy.offset + b0 * dy.sn).add<cl_long>(dy.sn).add<cl_long>(dy.sc).add<cl_long>(dy.sh);
      a.add<cl_long>(dy.sw).add(ws).add<cl_ulong>(m_off / es);
      launch_1d(q, k.k, static_cast<uint64_t>(P) * c.Cout, wg);
    }
    gemm(ctx, q, weight_chunk_gemm(c, acc, nb, b0 > 0, ws, u_off / es, v_off / es, m_off / es), ws, g_off);
  }
  LockedKernel& k = wino_kernel(ctx, dtype, "wino_grad_weight");
  std::lock_guard<std::mutex> lock(k.m);
  KernelArgs a(k.k);
  a.add<cl_int>(static_cast<int>(c.Cout)).add<cl_int>(static_cast<int>(c.Cin)).add(ws).add<cl_ulong>(u_off / es);
  a.add(dw.mem).add<cl_ulong>(dw.offset);
  launch_1d(q, k.k, static_cast<uint64_t>(c.Cout) * c.Cin, wg);
}

void winograd_prepare(const Context& ctx, DType dtype) { wino_kernel(ctx, dtype, "wino_input"); }

static bool choose_backward_weight(const Context& ctx, const ConvShape& s, DType dtype) {
  int env = winograd_env();
  if (env >= 0) return env == 1;
  if (autotune_mode() == TuneMode::Off) return false;
  std::ostringstream cls;
  cls << conv_arith_name(s, dtype) << "|C" << shape_bucket(s.C) << "|K" << shape_bucket(s.K) << "|P" << shape_bucket(s.OH * s.OW)
      << "|Z" << batch_bucket(s.N) << "|p" << s.ph << "x" << s.pw;
  ConvScratch scratch(ctx, s, dtype);
  std::string chosen = autotune_select(
      ctx, "conv_bwd_weight", cls.str(), {"gemm", "winograd"}, "gemm", [&](const std::string& cand) {
        const ConvShape& t = scratch.shape();
        ConvBuffer dw = scratch.w();
        if (cand == "winograd")
          return scratch.time_us(winograd_weight_workspace(ctx, t, dtype), [&](cl_command_queue q, cl_mem ws) {
            winograd_backward_weight(ctx, q, t, dtype, scratch.x(), scratch.y(), dw, ws, 0);
          });
        return scratch.time_us(gemm_backward_weight_workspace(ctx, t, dtype, scratch.x(), scratch.y()),
                               [&](cl_command_queue q, cl_mem ws) {
                                 gemm_backward_weight(ctx, q, t, dtype, scratch.x(), scratch.y(), dw, ws, 0);
                               });
      });
  return chosen == "winograd";
}

static bool choose_backward_data(const Context& ctx, const ConvShape& s, DType dtype) {
  int env = winograd_env();
  if (env >= 0) return env == 1;
  if (autotune_mode() == TuneMode::Off) return false;
  std::ostringstream cls;
  cls << conv_arith_name(s, dtype) << "|C" << shape_bucket(s.C) << "|K" << shape_bucket(s.K) << "|P" << shape_bucket(s.H * s.W)
      << "|Z" << batch_bucket(s.N) << "|p" << s.ph << "x" << s.pw;
  ConvScratch scratch(ctx, s, dtype);
  std::string chosen = autotune_select(
      ctx, "conv_bwd_data", cls.str(), {"gemm", "winograd"}, "gemm", [&](const std::string& cand) {
        const ConvShape& t = scratch.shape();
        WinoConv tc = winograd_backward_data_conv(t);
        ConvBuffer none;
        if (cand == "winograd")
          return scratch.time_us(winograd_workspace(ctx, tc, dtype), [&](cl_command_queue q, cl_mem ws) {
            winograd_run(ctx, q, tc, dtype, scratch.y(), scratch.w(), none, scratch.x(), ws, 0);
          });
        return scratch.time_us(gemm_backward_data_workspace(ctx, t, dtype, scratch.x(), scratch.y()),
                               [&](cl_command_queue q, cl_mem ws) {
                                 gemm_backward_data(ctx, q, t, dtype, scratch.y(), scratch.w(), scratch.x(), ws, 0);
                               });
      });
  return chosen == "winograd";
}

// Whether the gradients of a Winograd-eligible convolution take that path (remembered per problem).
static PlanMemo<18, bool>::Key conv_key(const Context& ctx, const ConvShape& s, DType dtype) {
  return {key_of(ctx), conv_arith_key(s, dtype), s.N, s.C, s.H, s.W, s.K, s.KH, s.KW, s.OH, s.OW, s.sh, s.sw, s.ph,
          s.pw, s.dh, s.dw, s.groups};
}

bool winograd_backward_weight_chosen(const Context& ctx, const ConvShape& s, DType dtype) {
  if (!winograd_eligible(s)) return false;
  static PlanMemo<18, bool> memo;
  return memo.get(conv_key(ctx, s, dtype), [&] { return choose_backward_weight(ctx, s, dtype); });
}

bool winograd_backward_data_chosen(const Context& ctx, const ConvShape& s, DType dtype) {
  if (!winograd_eligible(s)) return false;
  static PlanMemo<18, bool> memo;
  return memo.get(conv_key(ctx, s, dtype), [&] { return choose_backward_data(ctx, s, dtype); });
}

} // namespace detail
} // namespace dlprim
