// Convolution host side: path choice (depthwise / 1x1 GEMM / im2col + GEMM), image chunking
// of the patch workspace, and the GEMM descriptions of each pass.
#include <dlprim/conv.h>
#include <dlprim/embedded.h>
#include <dlprim/gemm.h>
#include <dlprim/rows.h>

#include "conv_internal.h"

#include <algorithm>
#include <string>

namespace dlprim {

namespace detail {

LockedKernel& conv_kernel(const Context& ctx, DType dtype, const char* name) {
  LockedKernel& slot = kernel_slot(ctx, std::string("conv|") + dtype_name(dtype) + "|" + name);
  std::lock_guard<std::mutex> lock(slot.m);
  if (!slot.k) slot.k = create_kernel(ctx.program(gemm_program_head(dtype) + kernel_source("conv")), name);
  return slot;
}

void add_geometry(KernelArgs& a, const ConvShape& s) {
  a.add<cl_int>(static_cast<int>(s.C / s.groups)).add<cl_int>(static_cast<int>(s.H)).add<cl_int>(static_cast<int>(s.W));
  a.add<cl_int>(static_cast<int>(s.KH)).add<cl_int>(static_cast<int>(s.KW));
  a.add<cl_int>(static_cast<int>(s.OH)).add<cl_int>(static_cast<int>(s.OW));
  a.add<cl_int>(static_cast<int>(s.sh)).add<cl_int>(static_cast<int>(s.sw));
  a.add<cl_int>(static_cast<int>(s.ph)).add<cl_int>(static_cast<int>(s.pw));
  a.add<cl_int>(static_cast<int>(s.dh)).add<cl_int>(static_cast<int>(s.dw));
  a.add<cl_int>(static_cast<int>(s.groups));
  // conv.cl's conv_div constants, in its DV_* slots
  cl_uint16 m{};
  cl_uchar16 sh{};
  const int64_t divisors[9] = {s.W, s.C, s.C / s.groups, s.sh, s.sw, s.OW, s.KH * s.KW, s.KW, s.groups};
  for (int i = 0; i < 9; ++i) {
    const uint64_t d = static_cast<uint64_t>(std::max<int64_t>(1, std::min<int64_t>(divisors[i], 0x7fffffff)));
    int l = 0;
    while ((uint64_t(1) << l) < d) ++l;
    m.s[i] = static_cast<cl_uint>((((uint64_t(1) << l) - d) << 32) / d + 1);
    sh.s[i] = static_cast<cl_uchar>((l ? 1 : 0) | ((l ? l - 1 : 0) << 1));
  }
  a.add(m).add(sh);
}

void add_tensor(KernelArgs& a, const ConvTensor& t, int64_t batch_offset) {
  a.add(t.mem).add<cl_ulong>(t.offset + batch_offset * t.sn).add<cl_long>(t.sn).add<cl_long>(t.sc);
  a.add<cl_long>(t.sh).add<cl_long>(t.sw);
}

} // namespace detail

using detail::add_geometry;
using detail::add_tensor;
using detail::conv_kernel;

namespace {

enum class Path { Depthwise, Gemm1x1, Im2col };

Path path_of(const ConvShape& s) {
  // One input channel per group: direct kernels, except that a forced Winograd takes the
  // single-channel ungrouped case too (so that it is testable there).
  if (s.C / s.groups == 1 && !(detail::winograd_env() == 1 && detail::winograd_eligible(s))) return Path::Depthwise;
  if (s.KH == 1 && s.KW == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 && s.pw == 0) return Path::Gemm1x1;
  return Path::Im2col;
}

bool pixel_linear(const ConvTensor& t, int64_t H, int64_t W) { return H == 1 || t.sh == W * t.sw; }

// The 1x1 path reads (or writes) the input-shaped tensor as a [C, H * W] matrix per image.
bool use_direct(Path p, const ConvShape& s, const ConvTensor& in) {
  return p == Path::Gemm1x1 && pixel_linear(in, s.H, s.W) && (in.sw == 1 || in.sc == 1);
}


void check(const Context& ctx, const ConvShape& s, DType dtype) {
  if (!is_floating(dtype)) throw Error(std::string("conv2d: dtype ") + dtype_name(dtype) + " is not supported");
  if (dtype == DType::F64 && !ctx.info().fp64)
    throw Error("conv2d: device '" + ctx.info().name + "' does not support float64 (no cl_khr_fp64)");
  if (s.groups < 1 || s.C % s.groups || s.K % s.groups) throw Error("conv2d: channels not divisible by groups");
  const int64_t lim = 0x7fffffff;
  if (s.N > lim || s.C * s.H * s.W > lim || s.K * s.OH * s.OW > lim || s.C * s.KH * s.KW * s.OH * s.OW > lim)
    throw Error("conv2d: tensor too large for 32-bit indexing of one image");
}



// Patch-matrix layout of the im2col path: per image and group a [Kg, OH * OW] matrix.
struct Cols {
  int64_t kg, npix, per_image;  // elements
  int64_t images;               // images per chunk
  uint64_t bytes;               // of one chunk
};

// `dtype` is the patch element type (the accumulation type for the input gradient).
Cols cols_plan(const Context& ctx, const ConvShape& s, DType dtype) {
  Cols c;
  c.kg = s.C / s.groups * s.KH * s.KW;
  c.npix = s.OH * s.OW;
  c.per_image = s.groups * c.kg * c.npix;
  uint64_t budget = std::min<uint64_t>(ctx.info().is_cpu ? (64ull << 20) : (256ull << 20), ctx.info().max_alloc_size / 4);
  uint64_t per = static_cast<uint64_t>(c.per_image) * dtype_size(dtype);
  c.images = std::max<int64_t>(1, std::min<int64_t>(s.N, per ? static_cast<int64_t>(budget / per) : s.N));
  c.bytes = per * c.images;
  return c;
}

uint64_t align_up(uint64_t v) { return (v + 255) / 256 * 256; }

// The GEMM of each pass for images [b0, b0 + nb), with the patch matrices at `cols`
// (or straight from the input for the 1x1 path). Buffers not needed for sizing may be null.
Gemm forward_gemm(const ConvShape& s, DType dtype, bool direct, const ConvTensor& x, const ConvBuffer& w,
                  const ConvBuffer& bias, const ConvTensor& y, cl_mem cols, uint64_t cols_off, int64_t b0, int64_t nb) {
  int64_t G = s.groups, Kg = s.C / G * s.KH * s.KW, Mg = s.K / G, npix = s.OH * s.OW;
  Gemm g;
  g.dtype = dtype;
  g.fp32_math = s.fp32_math;
  g.M = Mg;
  g.N = npix;
  g.K = Kg;
  g.batch = nb;
  g.groups = G;
  g.a = {w.mem, w.offset, Kg, 1, 0, Mg * Kg, 0};
  if (direct)
    g.b = {x.mem, x.offset + b0 * x.sn, x.sc, x.sw, x.sn, (s.C / G) * x.sc, 0};
  else
    g.b = {cols, cols_off, npix, 1, G * Kg * npix, Kg * npix, 0};
  g.c = {y.mem, y.offset + b0 * y.sn, y.sc, y.sw, y.sn, Mg * y.sc, 0};
  if (bias.mem) {
    g.has_d = true;
    g.beta = 1;
    g.d = {bias.mem, bias.offset, 1, 0, 0, Mg, 0};
  }
  return g;
}

Gemm backward_data_gemm(const ConvShape& s, DType dtype, bool direct, const ConvTensor& dy, const ConvBuffer& w,
                        const ConvTensor& dx, cl_mem cols, uint64_t cols_off, int64_t b0, int64_t nb) {
  int64_t G = s.groups, Kg = s.C / G * s.KH * s.KW, Mg = s.K / G, npix = s.OH * s.OW;
  Gemm g;
  g.dtype = dtype;
  g.fp32_math = s.fp32_math;
  g.M = Kg;
  g.N = npix;
  g.K = Mg;
  g.batch = nb;
  g.groups = G;
  g.a = {w.mem, w.offset, 1, Kg, 0, Mg * Kg, 0};
  g.b = {dy.mem, dy.offset + b0 * dy.sn, dy.sc, dy.sw, dy.sn, Mg * dy.sc, 0};
  if (direct) {
    g.c = {dx.mem, dx.offset + b0 * dx.sn, dx.sc, dx.sw, dx.sn, (s.C / G) * dx.sc, 0};
  } else {
    g.c = {cols, cols_off, npix, 1, G * Kg * npix, Kg * npix, 0};
    g.c_dtype = compute_dtype(dtype);  // summed again by col2im: keep full precision
    g.c_dtype_set = true;
  }
  return g;
}

Gemm backward_weight_gemm(const ConvShape& s, DType dtype, bool direct, const ConvTensor& x, const ConvTensor& dy,
                          const ConvBuffer& dw, cl_mem cols, uint64_t cols_off, int64_t b0, int64_t nb) {
  int64_t G = s.groups, Kg = s.C / G * s.KH * s.KW, Mg = s.K / G, npix = s.OH * s.OW;
  Gemm g;
  g.dtype = dtype;
  g.fp32_math = s.fp32_math;
  g.M = Mg;
  g.N = Kg;
  g.K = npix;
  g.batch = 1;
  g.groups = G;
  g.k_outer = nb;
  g.a = {dy.mem, dy.offset + b0 * dy.sn, dy.sc, dy.sw, 0, Mg * dy.sc, dy.sn};
  if (direct)
    g.b = {x.mem, x.offset + b0 * x.sn, x.sw, x.sc, 0, (s.C / G) * x.sc, x.sn};
  else
    g.b = {cols, cols_off, 1, npix, 0, Kg * npix, G * Kg * npix};
  g.c = {dw.mem, dw.offset, Kg, 1, 0, Mg * Kg, 0};
  if (b0 > 0) {  // later chunks accumulate into the first one's result
    g.has_d = true;
    g.beta = 1;
    g.d = g.c;
  }
  return g;
}

// Workspace of an im2col/1x1 pass: the patch chunk, then the GEMM's own scratch.
template <class MakeGemm>
uint64_t gemm_pass_bytes(const Context& ctx, const ConvShape& s, uint64_t cols_bytes, int64_t chunk,
                         const MakeGemm& make) {
  uint64_t ws = 0;
  for (int64_t nb : {chunk, s.N % chunk}) {
    if (nb <= 0) continue;
    ws = std::max(ws, gemm_workspace_bytes(ctx, make(nb)));
  }
  return align_up(cols_bytes) + ws;
}

// GPU mappings of conv.cl's im2col / col2im: dimension 0 over `inner` positions (a group's worth, or the
// positions rounded up to a warp when fewer), dimension 1 over `outer` rows taken in steps, at most 65535 groups
// (NVIDIA's limit on that dimension).
void launch_2d(const Context& ctx, cl_command_queue q, cl_kernel k, int64_t inner, int64_t outer) {
  if (inner <= 0 || outer <= 0) return;  // nothing to do (and a zero global size is an error before OpenCL 2.0)
  const size_t wg = ctx.work_group_size(256);
  size_t l0 = std::min<size_t>(wg, static_cast<size_t>((inner + 31) / 32 * 32));
  size_t l1 = std::max<size_t>(1, wg / l0);
  const size_t g0 = static_cast<size_t>((inner + l0 - 1) / l0) * l0;
  const size_t groups1 = std::min<size_t>(65535, static_cast<size_t>((outer + l1 - 1) / l1));
  const size_t global[2] = {g0, groups1 * l1}, local[2] = {l0, l1};
  launch_nd(q, k, 2, global, local);
}

void launch_im2col(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                   int64_t b0, int64_t nb, cl_mem cols, uint64_t cols_off, const Cols& c) {
  // GPUs: an output pixel per item along dimension 0 (coalesced stores), each item a chunk of channels of one
  // (image, group, tap); CPUs: one output row per work-item.
  bool rows = cpu_mapping(ctx);
  detail::LockedKernel& k = conv_kernel(ctx, dtype, rows ? "conv_im2col_rows" : "conv_im2col");
  std::lock_guard<std::mutex> lock(k.m);
  KernelArgs a(k.k);
  if (rows) {
    uint64_t total = static_cast<uint64_t>(nb) * c.per_image / std::max<int64_t>(s.OW, 1);
    a.add<cl_ulong>(total);
    add_geometry(a, s);
    add_tensor(a, x, b0);
    a.add(cols).add<cl_ulong>(cols_off);
    launch_1d(q, k.k, total, ctx.work_group_size(256));
    return;
  }
  // Channel chunks: enough rows for 2^19 items of two rows each, at least 8 channels a row where there are.
  const int64_t Cg = s.C / s.groups, taps = nb * s.groups * s.KH * s.KW;
  const int64_t want = ((int64_t(1) << 20) + c.npix * taps - 1) / std::max<int64_t>(1, c.npix * taps);
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(want, Cg / 8));
  a.add<cl_int>(static_cast<int>(taps * chunks)).add<cl_int>(static_cast<int>(chunks));
  add_geometry(a, s);
  add_tensor(a, x, b0);
  a.add(cols).add<cl_ulong>(cols_off);
  launch_2d(ctx, q, k.k, c.npix, (taps * chunks + 1) / 2);
}

void launch_col2im(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, cl_mem cols,
                   uint64_t cols_off, const ConvTensor& dx, int64_t b0, int64_t nb) {
  detail::LockedKernel& k = conv_kernel(ctx, dtype, "conv_col2im");
  std::lock_guard<std::mutex> lock(k.m);
  const int64_t planes = nb * s.C;
  KernelArgs a(k.k);
  a.add<cl_int>(static_cast<int>(planes));
  add_geometry(a, s);
  a.add(cols).add<cl_ulong>(cols_off);
  add_tensor(a, dx, b0);
  // Planes an item: 4 where a position has at most one tap (1x1 stride 2: the taps found once serve them; H200,
  // resnet50's three such layers 20-25% faster than one plane an item), else 1 (3x3 / 7x7 stride 2: 4 planes of
  // several dependent reads an item ran 10-25% slower than a plane each, for lack of parallel items).
  const int64_t per_item = s.KH * s.KW <= s.sh * s.sw ? 4 : 1;
  launch_2d(ctx, q, k.k, s.H * s.W, (planes + per_item - 1) / per_item);
}

struct Workspace {
  cl_mem mem;
  uint64_t offset;  // bytes
};

} // namespace

std::string conv_arith_name(const ConvShape& s, DType dtype) {
  std::string n = dtype_name(dtype);
  return dtype == DType::F32 && s.fp32_math == Fp32Math::Tf32 ? n + "+tf32" : n;
}

int64_t conv_arith_key(const ConvShape& s, DType dtype) {
  return static_cast<int64_t>(dtype) * 4 + (dtype == DType::F32 ? static_cast<int64_t>(s.fp32_math) : 0);
}

int64_t conv_output_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

const char* conv2d_path(const ConvShape& s) {
  switch (path_of(s)) {
    case Path::Depthwise: return "depthwise";
    case Path::Gemm1x1: return "gemm1x1";
    case Path::Im2col: return "im2col";
  }
  return "";
}

std::string conv2d_algorithm(const Context& ctx, ConvPass pass, const ConvShape& s, DType dtype,
                             const ConvTensor& in, const ConvTensor& out) {
  check(ctx, s, dtype);
  Path p = path_of(s);
  if (p == Path::Depthwise) return "depthwise";
  bool direct = use_direct(p, s, in);
  if (direct) return "gemm1x1";
  if (pass == ConvPass::Forward) {
    detail::ImplicitPlan ip = detail::implicit_forward_plan(ctx, s, dtype, in, out);
    if (ip.winograd) return "winograd";
    if (ip.use) return "implicit " + ip.cfg.str() + " splits=" + std::to_string(ip.split.splits);
    return "im2col";
  }
  if (pass == ConvPass::BackwardData) return detail::winograd_backward_data_chosen(ctx, s, dtype) ? "winograd" : "col2im";
  return detail::winograd_backward_weight_chosen(ctx, s, dtype) ? "winograd" : "im2col";
}

namespace {

} // namespace

uint64_t conv2d_workspace_bytes(const Context& ctx, ConvPass pass, const ConvShape& s, DType dtype,
                                const ConvTensor& in, const ConvTensor& out) {
  check(ctx, s, dtype);
  Path p = path_of(s);
  if (p == Path::Depthwise && pass == ConvPass::BackwardWeight && s.N > 0)
    return detail::depthwise_weight_workspace(ctx, s, dtype, out);
  if (p == Path::Depthwise || s.N == 0) return 0;
  bool direct = use_direct(p, s, in);
  Cols c = cols_plan(ctx, s, pass == ConvPass::BackwardData ? compute_dtype(dtype) : dtype);
  int64_t chunk = direct ? s.N : c.images;
  uint64_t cols_bytes = direct ? 0 : c.bytes;
  ConvBuffer none;
  switch (pass) {
    case ConvPass::Forward:
      if (!direct) {
        detail::ImplicitPlan ip = detail::implicit_forward_plan(ctx, s, dtype, in, out);
        if (ip.winograd) return detail::winograd_workspace(ctx, detail::winograd_forward_conv(s), dtype);
        if (ip.use) return ip.split.workspace_bytes;
      }
      return gemm_pass_bytes(ctx, s, cols_bytes, chunk,
                             [&](int64_t nb) { return forward_gemm(s, dtype, direct, in, none, none, out, nullptr, 0, 0, nb); });
    case ConvPass::BackwardData:
      if (!direct && detail::winograd_backward_data_chosen(ctx, s, dtype))
        return detail::winograd_workspace(ctx, detail::winograd_backward_data_conv(s), dtype);
      return detail::gemm_backward_data_workspace(ctx, s, dtype, in, out);
    case ConvPass::BackwardWeight:
      if (!direct && detail::winograd_backward_weight_chosen(ctx, s, dtype))
        return detail::winograd_weight_workspace(ctx, s, dtype);
      return detail::gemm_backward_weight_workspace(ctx, s, dtype, in, out);
  }
  return 0;
}

namespace detail {

uint64_t im2col_forward_workspace(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& x,
                                  const ConvTensor& y) {
  Path p = path_of(s);
  bool direct = use_direct(p, s, x);
  Cols c = cols_plan(ctx, s, dtype);
  int64_t chunk = direct ? s.N : c.images;
  ConvBuffer none;
  return gemm_pass_bytes(ctx, s, direct ? 0 : c.bytes, chunk,
                         [&](int64_t nb) { return forward_gemm(s, dtype, direct, x, none, none, y, nullptr, 0, 0, nb); });
}

void im2col_prepare(const Context& ctx, DType dtype) {
  conv_kernel(ctx, dtype, cpu_mapping(ctx) ? "conv_im2col_rows" : "conv_im2col");
}

void im2col_forward(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                    const ConvBuffer& w, const ConvBuffer& bias, const ConvTensor& y, cl_mem ws, uint64_t ws_offset) {
  bool direct = use_direct(path_of(s), s, x);
  Cols c = cols_plan(ctx, s, dtype);
  int64_t chunk = direct ? s.N : c.images;
  uint64_t gemm_off = ws_offset + (direct ? 0 : align_up(c.bytes));
  for (int64_t b0 = 0; b0 < s.N; b0 += chunk) {
    int64_t nb = std::min(chunk, s.N - b0);
    uint64_t cols_off = ws_offset / dtype_size(dtype);
    if (!direct) launch_im2col(ctx, q, s, dtype, x, b0, nb, ws, cols_off, c);
    Gemm g = forward_gemm(s, dtype, direct, x, w, bias, y, ws, cols_off, b0, nb);
    gemm(ctx, q, g, ws, gemm_off);
  }
}

uint64_t gemm_backward_data_workspace(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& dx,
                                      const ConvTensor& dy) {
  Path p = path_of(s);
  bool direct = use_direct(p, s, dx);
  Cols c = cols_plan(ctx, s, compute_dtype(dtype));
  int64_t chunk = direct ? s.N : c.images;
  ConvBuffer none;
  return gemm_pass_bytes(ctx, s, direct ? 0 : c.bytes, chunk, [&](int64_t nb) {
    return backward_data_gemm(s, dtype, direct, dy, none, dx, nullptr, 0, 0, nb);
  });
}

void gemm_backward_data(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& dy,
                        const ConvBuffer& w, const ConvTensor& dx, cl_mem ws, uint64_t ws_offset) {
  if (!pixel_linear(dy, s.OH, s.OW)) throw Error("conv2d backward: grad_output rows must be contiguous in pixels");
  bool direct = use_direct(path_of(s), s, dx);
  DType col_t = compute_dtype(dtype);
  Cols c = cols_plan(ctx, s, col_t);
  int64_t chunk = direct ? s.N : c.images;
  uint64_t gemm_off = ws_offset + (direct ? 0 : align_up(c.bytes));
  for (int64_t b0 = 0; b0 < s.N; b0 += chunk) {
    int64_t nb = std::min(chunk, s.N - b0);
    uint64_t cols_off = ws_offset / dtype_size(col_t);
    Gemm g = backward_data_gemm(s, dtype, direct, dy, w, dx, ws, cols_off, b0, nb);
    if (s.K == 0) g.k_outer = 0;  // no output channels: the gradient is zero
    gemm(ctx, q, g, ws, gemm_off);
    if (!direct) launch_col2im(ctx, q, s, dtype, ws, cols_off, dx, b0, nb);
  }
}

uint64_t gemm_backward_weight_workspace(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& x,
                                        const ConvTensor& dy) {
  Path p = path_of(s);
  bool direct = use_direct(p, s, x);
  Cols c = cols_plan(ctx, s, dtype);
  int64_t chunk = direct ? s.N : c.images;
  ConvBuffer none;
  return gemm_pass_bytes(ctx, s, direct ? 0 : c.bytes, chunk, [&](int64_t nb) {
    return backward_weight_gemm(s, dtype, direct, x, dy, none, nullptr, 0, 0, nb);
  });
}

void gemm_backward_weight(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                          const ConvTensor& dy, const ConvBuffer& dw, cl_mem ws, uint64_t ws_offset) {
  Path p = path_of(s);
  if (!pixel_linear(dy, s.OH, s.OW)) throw Error("conv2d backward: grad_output rows must be contiguous in pixels");
  bool direct = use_direct(p, s, x);
  Cols c = cols_plan(ctx, s, dtype);
  int64_t chunk = direct ? s.N : c.images;
  uint64_t gemm_off = ws_offset + (direct ? 0 : align_up(c.bytes));
  if (s.N == 0) {  // an empty sum: zero weights gradient
    Gemm g = backward_weight_gemm(s, dtype, true, x, dy, dw, nullptr, 0, 0, 0);
    gemm(ctx, q, g, ws, gemm_off);
    return;
  }
  for (int64_t b0 = 0; b0 < s.N; b0 += chunk) {
    int64_t nb = std::min(chunk, s.N - b0);
    uint64_t cols_off = ws_offset / dtype_size(dtype);
    if (!direct) launch_im2col(ctx, q, s, dtype, x, b0, nb, ws, cols_off, c);
    Gemm g = backward_weight_gemm(s, dtype, direct, x, dy, dw, ws, cols_off, b0, nb);
    gemm(ctx, q, g, ws, gemm_off);
  }
}

} // namespace detail

void conv2d_forward(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                    const ConvBuffer& w, const ConvBuffer& bias, const ConvTensor& y, cl_mem ws, uint64_t ws_offset) {
  check(ctx, s, dtype);
  if (s.N == 0 || s.K == 0 || s.OH <= 0 || s.OW <= 0) return;
  Path p = path_of(s);
  if (p == Path::Depthwise) return detail::depthwise_forward(ctx, q, s, dtype, x, w, bias, y);
  if (!pixel_linear(y, s.OH, s.OW)) throw Error("conv2d: output rows must be contiguous in pixels");
  if (!use_direct(p, s, x)) {
    detail::ImplicitPlan ip = detail::implicit_forward_plan(ctx, s, dtype, x, y);
    if (ip.winograd)
      return detail::winograd_run(ctx, q, detail::winograd_forward_conv(s), dtype, x, w, bias, y, ws, ws_offset);
    if (ip.use) return detail::implicit_forward(ctx, q, ip, s, dtype, x, w, bias, y, ws, ws_offset);
  }
  detail::im2col_forward(ctx, q, s, dtype, x, w, bias, y, ws, ws_offset);
}

void conv2d_backward_data(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& dy,
                          const ConvBuffer& w, const ConvTensor& dx, cl_mem ws, uint64_t ws_offset) {
  check(ctx, s, dtype);
  if (s.N == 0 || s.C == 0 || s.H == 0 || s.W == 0) return;
  Path p = path_of(s);
  if (p == Path::Depthwise) return detail::depthwise_backward_data(ctx, q, s, dtype, dy, w, dx);
  if (!use_direct(p, s, dx) && detail::winograd_backward_data_chosen(ctx, s, dtype))
    return detail::winograd_run(ctx, q, detail::winograd_backward_data_conv(s), dtype, dy, w, ConvBuffer{}, dx, ws,
                                ws_offset);
  detail::gemm_backward_data(ctx, q, s, dtype, dy, w, dx, ws, ws_offset);
}

void conv2d_backward_weight(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype,
                            const ConvTensor& x, const ConvTensor& dy, const ConvBuffer& dw, cl_mem ws,
                            uint64_t ws_offset) {
  check(ctx, s, dtype);
  if (s.K == 0 || s.C == 0) return;
  Path p = path_of(s);
  if (p == Path::Depthwise) return detail::depthwise_backward_weight(ctx, q, s, dtype, x, dy, dw, ws, ws_offset);
  if (s.N > 0 && !use_direct(p, s, x) && detail::winograd_backward_weight_chosen(ctx, s, dtype))
    return detail::winograd_backward_weight(ctx, q, s, dtype, x, dy, dw, ws, ws_offset);
  detail::gemm_backward_weight(ctx, q, s, dtype, x, dy, dw, ws, ws_offset);
}

void conv_im2col(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                 cl_mem cols, uint64_t cols_offset) {
  check(ctx, s, dtype);
  if (s.N * s.C * s.KH * s.KW * s.OH * s.OW == 0) return;
  launch_im2col(ctx, q, s, dtype, x, 0, s.N, cols, cols_offset, cols_plan(ctx, s, dtype));
}

void conv_col2im(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, cl_mem cols,
                 uint64_t cols_offset, const ConvTensor& dx) {
  check(ctx, s, dtype);
  if (s.N * s.C * s.H * s.W == 0) return;
  launch_col2im(ctx, q, s, dtype, cols, cols_offset, dx, 0, s.N);
}

} // namespace dlprim
