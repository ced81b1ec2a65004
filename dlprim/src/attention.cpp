// Launches of the fused attention kernels (kernels/attention.cl: row kernels; attention_tiled.cl and
// attention_bwd_tiled.cl: register tiles): the per-head-dim layouts, their environment overrides and
// the program text.
#include "attention_mma.h"

#include <dlprim/env.h>
#include <dlprim/attention.h>
#include <dlprim/int_math.h>
#include <dlprim/embedded.h>
#include <dlprim/program_cache.h>
#include <dlprim/thread_memo.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>

namespace dlprim {

namespace {

struct Layout {
  int tpr = 1, br = 64, bc = 32;  // row kernels (attention.cl)
  // register-tiled forward (attention_tiled.cl); bq == 0: the row kernel
  int bq = 0, bk = 0, kc = 0, ntc = 0;
  bool split = false;  // tiled dk/dv pass: PZ and dS share local memory (attention_bwd_tiled.cl)
  // Every field: the kernel cache's key (cheap to build on every launch, unlike a string).
  std::array<int, 8> key() const { return {tpr, br, bc, bq, bk, kc, ntc, split ? 1 : 0}; }
};

enum class Pass { Forward = 0, Backward = 1 };


uint64_t local_limit(const Context& ctx) { return ctx.info().local_mem_size ? ctx.info().local_mem_size : 32768; }

// Local memory of a row-kernel pass (kernels/attention.cl: two staged tiles with padded chunks,
// the exchange array when TPR > 1, and the backward's per-column lse/delta).
uint64_t local_bytes(const Layout& l, int64_t D, int64_t DV, size_t es, Pass pass) {
  int64_t dc = (ceil_div(D, l.tpr) + 3) / 4 * 4, dvc = (ceil_div(DV, l.tpr) + 3) / 4 * 4;
  int64_t ks = l.tpr * (dc + 4), vs = l.tpr * (dvc + 4);
  int64_t x = l.tpr > 1 ? static_cast<int64_t>(l.br) * (static_cast<int64_t>(l.tpr) * l.bc + 1) : 1;
  int64_t extra = pass == Pass::Backward ? 2 * l.bc : 0;
  return static_cast<uint64_t>(l.bc * ks + l.bc * vs + x + extra) * es;
}

// Local memory of the tiled forward (kernels/attention_tiled.cl: Qs, Ks and Ps in one array, Vs, red).
uint64_t tiled_local_bytes(const Layout& l, int64_t D, int64_t DV, size_t es) {
  int64_t dp = round_up(D, 4), dvp = round_up(DV, 4 * l.ntc);
  int64_t qrows = l.kc >= dp ? dp : l.kc;
  int64_t kstep = l.kc >= dp ? dp : l.kc;
  int64_t kps = std::max<int64_t>(kstep * l.bk, static_cast<int64_t>(l.bk) * (l.bq + 4));  // Ks and Ps share
  return static_cast<uint64_t>(qrows * l.bq + kps + l.bk * dvp + l.bq * l.ntc) * es;
}

bool tiled_valid(const Layout& l) {
  return l.ntc >= 1 && l.bq >= 4 && l.bq % 4 == 0 && l.bk % (4 * l.ntc) == 0 && l.bk > 0 && l.kc >= 4 &&
         l.kc % 4 == 0 && l.bq / 4 * l.ntc <= 1024;
}

// The register-tiled forward for head dims up to 64 (up to 128 when set by the variable below): 64
// queries per work-group, 8 threads across the columns (128 threads), 32-key tiles, the queries
// staged for the whole loop; wider heads stream the score product's head dim in chunks of 32.
// Smaller devices (local memory) get shorter chunks, then narrower tiles.
// PYTORCH_OCL_ATTN_TILED = "BQ,BK,KC,NTC" sets the tile; "0" selects the row kernel.
Layout tiled_layout_for(const Context& ctx, int64_t D, int64_t DV, DType compute) {
  Layout l;
  const char* env = env_value("PYTORCH_OCL_ATTN_TILED");
  if (env && std::string(env) == "0") return l;
  l.bq = 64;
  l.bk = 32;
  l.ntc = 8;
  l.kc = round_up(D, 4) <= 64 ? static_cast<int>(round_up(D, 4)) : 32;
  if (env) {
    Layout e;
    if (std::sscanf(env, "%d,%d,%d,%d", &e.bq, &e.bk, &e.kc, &e.ntc) == 4 && tiled_valid(e)) l = e;
  } else if (std::max(D, DV) > 64) {
    return Layout();  // measured on an H100: the row kernel is faster for wider heads (6.7 vs 9.2 ms at D 128)
  }
  if (std::max(D, DV) > 128) return Layout();  // registers: o alone is 4 x DV / NTC per thread
  const size_t es = dtype_size(compute);
  const uint64_t limit = local_limit(ctx);
  if (tiled_local_bytes(l, D, DV, es) > limit && l.kc >= round_up(D, 4)) l.kc = 32;
  while (l.kc > 4 && tiled_local_bytes(l, D, DV, es) > limit) l.kc /= 2;
  while (l.bk > 4 * l.ntc && tiled_local_bytes(l, D, DV, es) > limit) l.bk /= 2;
  while (l.bq > 4 && tiled_local_bytes(l, D, DV, es) > limit) l.bq /= 2;
  if (tiled_local_bytes(l, D, DV, es) > limit || l.kc % 4 || l.bk % (4 * l.ntc)) l.bq = 0;  // the row kernel
  if (l.bq && l.bq / 4 * l.ntc > static_cast<int64_t>(ctx.info().max_work_group_size)) l.bq = 0;
  return l;
}

// PYTORCH_OCL_ATTN_BWD_TILED: which passes of the backward run on register tiles. Both are by default
// (head dims <= 64): on the H200, B8 H12 L1024 D64, fwd+bwd 3.55 -> 2.84 ms causal and 5.59 -> 4.69 ms
// not (the dk/dv pass 1.6x faster than the row kernel), B4 H16 L4096 causal 29.9 -> 25.2 ms.
//   "0": the row kernels (attention.cl);  unset or "1": both tiled passes, default tiles;
//   "BQ,BK,NTC": the dq pass on that tile, the dk/dv pass on rows (the variable's first syntax);
//   parts joined by '+', each "dq" or "dkdv" (default tile), "dq=BQ,BK,NTC" / "dkdv=BQ,BK,NTC" (that
//   tile) or "dq=0" / "dkdv=0" (rows): e.g. "dkdv", "dq+dkdv=32,64,8". BQ is the query tile, BK the
//   key tile and NTC the threads across a tile's columns in both passes; "dkdv=BQ,BK,NTC,split" also
//   makes the dk/dv pass share its PZ and dS tiles (which it does by itself where local memory needs
//   it). A value that does not parse, or a tile the pass cannot take, leaves that pass on rows.
struct BwdChoice {
  bool on = false, tile = false;  // tile: bq, bk, ntc given
  Layout l;
};

BwdChoice bwd_tiled_choice(const std::string& pass) {
  BwdChoice c;
  const char* env = env_value("PYTORCH_OCL_ATTN_BWD_TILED");
  const std::string v = env ? env : "";
  auto parse_tile = [&c](std::string t) {
    const std::string split = ",split";
    if (t.size() > split.size() && t.compare(t.size() - split.size(), split.size(), split) == 0) {
      c.l.split = true;
      t.resize(t.size() - split.size());
    }
    char extra = 0;
    c.tile = std::sscanf(t.c_str(), "%d,%d,%d%c", &c.l.bq, &c.l.bk, &c.l.ntc, &extra) == 3;
    c.on = c.tile;
  };
  if (v == "0") return c;
  if (v.empty() || v == "1") {
    c.on = true;
  } else if (v[0] >= '0' && v[0] <= '9') {
    if (pass == "dq") parse_tile(v);
  } else {
    std::istringstream parts(v);
    for (std::string part; std::getline(parts, part, '+');) {
      const size_t eq = part.find('=');
      if (part.substr(0, eq) != pass) continue;
      const std::string arg = eq == std::string::npos ? "1" : part.substr(eq + 1);
      c = BwdChoice();
      if (arg == "1") c.on = true;
      else if (arg != "0") parse_tile(arg);
    }
  }
  return c;
}

// Local memory of the tiled dq pass (attention_tiled.cl, ATTN_BWD: Qs, dOs, Ks/dSs, Vt/Kn).
uint64_t dq_tiled_local_bytes(const Layout& l, int64_t D, int64_t DV, size_t es) {
  int64_t dp = round_up(D, 4), dvp = round_up(DV, 4), dqp = round_up(D, 4 * l.ntc);
  int64_t kds = std::max<int64_t>(dp * l.bk, static_cast<int64_t>(l.bk) * (l.bq + 4));
  int64_t vkn = std::max<int64_t>(dvp * l.bk, l.bk * dqp);
  return static_cast<uint64_t>(dp * l.bq + dvp * l.bq + kds + vkn) * es;
}

// The tiled dq pass of the backward (PYTORCH_OCL_ATTN_BWD_TILED above). Default tile: 32-key steps,
// 8 threads across, as many queries as local memory holds, up to 64; head dims up to 64 by default
// (dq and the fetched key tile live in registers).
Layout dq_tiled_layout_for(const Context& ctx, int64_t D, int64_t DV, DType compute) {
  const BwdChoice c = bwd_tiled_choice("dq");
  if (!c.on) return Layout();
  Layout l;
  l.bq = 64;
  l.bk = 32;
  l.ntc = 8;
  if (c.tile) {
    Layout e = c.l;
    e.kc = 4;
    e.split = false;
    if (!tiled_valid(e)) return Layout();
    l = e;
  } else if (std::max(D, DV) > 64) {
    return Layout();
  }
  l.kc = static_cast<int>(round_up(D, 4));  // the queries stay staged: the whole head dim
  const size_t es = dtype_size(compute);
  const uint64_t limit = local_limit(ctx);
  while (l.bq > 4 && dq_tiled_local_bytes(l, D, DV, es) > limit) l.bq -= l.bq > 16 ? 16 : 4;
  if (dq_tiled_local_bytes(l, D, DV, es) > limit) return Layout();
  if (l.bq / 4 * l.ntc > static_cast<int64_t>(ctx.info().max_work_group_size)) return Layout();
  return l;
}

// Local memory of the tiled dk/dv pass (attention_bwd_tiled.cl: K, V, Q, dO in natural layout with
// rows padded by 4, the [query][key] P and dS tiles, lse and delta).
uint64_t dkdv_tiled_local_bytes(const Layout& l, int64_t D, int64_t DV, size_t es) {
  const int64_t w = 4 * l.ntc, bk = l.bk, bq = l.bq;
  const int64_t k = bk * (round_up(D, 4) + 4), v = bk * (round_up(DV, 4) + 4);
  const int64_t q = bq * (round_up(D, w) + 4), o = bq * (round_up(DV, w) + 4);
  return static_cast<uint64_t>(k + v + q + o + (l.split ? 1 : 2) * bq * (bk + 4) + 2 * bq) * es;
}

bool dkdv_tiled_valid(const Layout& l) {
  return l.ntc >= 1 && l.bq >= l.ntc && l.bq % l.ntc == 0 && l.bk >= 4 && l.bk % 4 == 0 &&
         l.bk / 4 * l.ntc <= 1024;
}

// The tiled dk/dv pass of the backward (PYTORCH_OCL_ATTN_BWD_TILED above). Default tile: 32 keys
// per work-group, 32-query steps, 8 threads across (64 threads; fp32 at head dim 64 takes 43 KiB of
// local memory, under NVIDIA's 48); head dims up to 64 by default, up to 128 with an explicit tile
// (dk and dv live in registers: 4 (D + DV) / NTC per thread). A tile over the device's local memory
// first shares the PZ and dS tiles (split: fp32 at head dim 64 fits 64 keys by 16 queries so), then
// BQ shrinks (by NTC), then BK halves.
Layout dkdv_tiled_layout_for(const Context& ctx, int64_t D, int64_t DV, DType compute) {
  const BwdChoice c = bwd_tiled_choice("dkdv");
  if (!c.on) return Layout();
  Layout l;
  if (c.tile) {
    l = c.l;
  } else {
    if (std::max(D, DV) > 64) return Layout();
    l.bq = 32;
    l.bk = 32;
    l.ntc = 8;
  }
  // registers: dk and dv alone are 4 (D + DV) / NTC per thread (the row kernel takes wider heads)
  if (!dkdv_tiled_valid(l) || std::max(D, DV) > 128) return Layout();
  l.kc = 4;  // unused by the kernel (the program text defines it)
  const size_t es = dtype_size(compute);
  const uint64_t limit = local_limit(ctx);
  l.split = l.split || dkdv_tiled_local_bytes(l, D, DV, es) > limit;
  while (l.bq > l.ntc && dkdv_tiled_local_bytes(l, D, DV, es) > limit) l.bq -= l.ntc;
  while (l.bk > 4 && dkdv_tiled_local_bytes(l, D, DV, es) > limit) l.bk = std::max(4, l.bk / 8 * 4);
  if (dkdv_tiled_local_bytes(l, D, DV, es) > limit) return Layout();
  if (l.bk / 4 * l.ntc > static_cast<int64_t>(ctx.info().max_work_group_size)) return Layout();
  return l;
}

// A row's vectors (forward: q, o; backward: q, dO, dq or k, v, dk, dv) live in registers, split over
// TPR = ceil(dim / elements per thread) threads per row; ~128 threads per work-group; the column
// tile (one score accumulator per column) shrinks until its staging fits local memory.
Layout layout_for(const Context& ctx, int64_t D, int64_t DV, DType compute, Pass pass) {
  if (pass == Pass::Forward) {
    Layout t = tiled_layout_for(ctx, D, DV, compute);
    if (t.bq) return t;
  }
  Layout l;
  // Measured on an H100 (benchmarks/transformer.py, layouts swept with the variables below): head
  // dims <= 64 run best with 32 elements per thread in both passes (forward: 16-column tiles),
  // wider heads with 64 (forward: 32-column tiles); the backward's tiles stay at 16 columns.
  const bool wide = std::max(D, DV) > 64;
  int64_t per_thread = wide ? 64 : 32;
  int threads = 128;
  l.bc = pass == Pass::Forward && wide ? 32 : 16;
  // PYTORCH_OCL_ATTN_FWD / PYTORCH_OCL_ATTN_BWD = "ELEMS,BC,THREADS" (layout experiments).
  if (const char* env = env_value(pass == Pass::Forward ? "PYTORCH_OCL_ATTN_FWD" : "PYTORCH_OCL_ATTN_BWD")) {
    long e = 0, c = 0, t = 0;
    if (std::sscanf(env, "%ld,%ld,%ld", &e, &c, &t) == 3 && e >= 4 && c >= 1 && c <= 64 && t >= 1) {
      per_thread = e;
      l.bc = static_cast<int>(c);
      threads = static_cast<int>(t);
    }
  }
  l.tpr = static_cast<int>(std::max<int64_t>(1, ceil_div(std::max(D, DV), per_thread)));
  l.br = std::max(1, threads / l.tpr);
  size_t es = dtype_size(compute);
  uint64_t limit = local_limit(ctx);
  while (l.bc > 4 && local_bytes(l, D, DV, es, pass) > limit) l.bc /= 2;
  while (l.br > 1 && local_bytes(l, D, DV, es, pass) > limit) l.br /= 2;
  if (local_bytes(l, D, DV, es, pass) > limit) throw Error("attention: head dims too large for the device's local memory");
  return l;
}

// Which kernel file a tiled layout's program holds: attention_tiled.cl's forward or dq pass, or
// attention_bwd_tiled.cl's dk/dv pass (after attention_tiled.cl's macros).
enum class Tiled { Forward, Dq, DkDv };

std::string program_text(DType dtype, DType compute, int64_t D, int64_t DV, const Layout& l, bool mask, bool dropout,
                         bool vec, Tiled which = Tiled::Forward) {
  std::ostringstream s;
  if (compute == DType::F64) s << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  s << kernel_source("common");
  if (dropout) s << kernel_source("philox") << "#define DROPOUT 1\n";
  s << "#define T " << compute_cl_type(compute) << "\n#define T4 " << compute_cl_type(compute) << "4\n"
    << "#define ST " << storage_cl_type(dtype) << "\n"
    << "#define LOAD(p, i) (" << convert_expr(dtype, compute, load_expr(dtype, "(p)", "(i)")) << ")\n"
    << "#define STORE(p, i, v) do { " << store_stmt(dtype, "(p)", "(i)", convert_expr(compute, dtype, "(v)"))
    << " } while (0)\n"
    << "#define D " << D << "\n#define DV " << DV << "\n#define HAS_MASK " << (mask ? 1 : 0) << "\n"
    << "#define ATTN_NATIVE_EXP " << (compute == DType::F32 ? 1 : 0) << "\n#define ATTN_VEC " << (vec ? 1 : 0)
    << "\n";
  if (l.bq && which == Tiled::Dq) s << "#define ATTN_BWD 1\n";
  if (l.bq && which == Tiled::DkDv) s << "#define ATTN_DKDV 1\n#define DKDV_SPLIT " << (l.split ? 1 : 0) << "\n";
  if (l.bq)
    s << "#define BQ " << l.bq << "\n#define BK " << l.bk << "\n#define KC " << l.kc << "\n#define NTC " << l.ntc << "\n";
  else
    s << "#define TPR " << l.tpr << "\n#define BR " << l.br << "\n#define BC " << l.bc << "\n";
  s << kernel_source("attention_common") << kernel_source(l.bq ? "attention_tiled" : "attention");
  if (l.bq && which == Tiled::DkDv) s << kernel_source("attention_bwd_tiled");
  return s.str();
}

struct Kernels {
  std::mutex m;
  // dq_layout.bq / dkdv_layout.bq: the backward's dq / dk-dv pass runs the tiled kernel
  Layout layout, dq_layout, dkdv_layout;
  // forward: attn_fwd or attn_fwd_tiled (+ attn_keep_mask with dropout); backward: attn_bwd_dq or
  // attn_bwd_dq_tiled, attn_bwd_dkdv or attn_bwd_dkdv_tiled
  cl_kernel a = nullptr, b = nullptr;
};

// The layout is part of the key: the environment overrides are read on every call, so a test can
// run each layout in one process. The layouts' fields, not their names (a per-call ostringstream).
using Key = std::tuple<cl_context, int, int64_t, int64_t, bool, bool, int, std::array<int, 8>, std::array<int, 8>,
                       std::array<int, 8>, bool>;

// Whether every staged operand's rows can be read as aligned 4-vectors (kernels' ATTN_VEC).
bool vec_ok(DType dtype, int64_t D, int64_t DV, std::initializer_list<const AttnTensor*> ts) {
  if (dtype != compute_dtype(dtype) || D % 4 || DV % 4) return false;
  for (const AttnTensor* t : ts)
    if (t->sd != 1 || t->sl % 4 || t->sh % 4 || t->sb % 4 || t->offset % 4) return false;
  return true;
}

Kernels& kernels_for(const Context& ctx, DType dtype, int64_t D, int64_t DV, bool mask, bool dropout, Pass pass,
                     bool vec) {
  const DType compute = compute_dtype(dtype);
  const bool bwd = pass == Pass::Backward;
  const Layout layout = layout_for(ctx, D, DV, compute, pass);
  const Layout dq_layout = bwd ? dq_tiled_layout_for(ctx, D, DV, compute) : Layout();
  const Layout dkdv_layout = bwd ? dkdv_tiled_layout_for(ctx, D, DV, compute) : Layout();
  const Key key(ctx.context(), static_cast<int>(dtype), D, DV, mask, dropout, static_cast<int>(pass), layout.key(),
                dq_layout.key(), dkdv_layout.key(), vec);
  // A per-thread memo skips the global lock and the map's tuple comparisons on every launch (std::map
  // entries are never erased and keep their addresses).
  thread_local ThreadMemo<Key, Kernels, 8> memo;
  Kernels* k = &memo.get(key, [&key] {
    static std::mutex map_mutex;
    static std::map<Key, Kernels> cache;
    std::lock_guard<std::mutex> lock(map_mutex);
    return &cache[key];
  });
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->a) {
    k->layout = layout;
    k->dq_layout = dq_layout;
    k->dkdv_layout = dkdv_layout;
    cl_program rows = nullptr;  // built only when a pass runs a row kernel
    auto rows_program = [&]() {
      if (!rows) rows = ctx.program(program_text(dtype, compute, D, DV, layout, mask, dropout, vec));
      return rows;
    };
    auto tiled_program = [&](const Layout& l, Tiled which) {
      return ctx.program(program_text(dtype, compute, D, DV, l, mask, dropout, vec, which));
    };
    if (bwd) {  // the dq and dk/dv programs (the row program for a pass without a tile) built at once
      std::vector<Tiled> need;
      if (dq_layout.bq) need.push_back(Tiled::Dq);
      if (dkdv_layout.bq) need.push_back(Tiled::DkDv);
      if (!dq_layout.bq || !dkdv_layout.bq) need.push_back(Tiled::Forward);
      parallel_builds(ctx.info(), need.size(), [&](size_t i) {
        const Layout& l = need[i] == Tiled::Dq ? dq_layout : need[i] == Tiled::DkDv ? dkdv_layout : layout;
        ctx.program(program_text(dtype, compute, D, DV, l, mask, dropout, vec, need[i]));
      });
    }
    if (!bwd) {
      k->a = create_kernel(rows_program(), layout.bq ? "attn_fwd_tiled" : "attn_fwd");
      if (dropout) k->b = create_kernel(rows_program(), "attn_keep_mask");
    } else {
      k->a = dq_layout.bq ? create_kernel(tiled_program(dq_layout, Tiled::Dq), "attn_bwd_dq_tiled")
                          : create_kernel(rows_program(), "attn_bwd_dq");
      k->b = dkdv_layout.bq ? create_kernel(tiled_program(dkdv_layout, Tiled::DkDv), "attn_bwd_dkdv_tiled")
                            : create_kernel(rows_program(), "attn_bwd_dkdv");
    }
  }
  return *k;
}

struct Strides {
  cl_long b, h, l, d;
};

void add_tensor(KernelArgs& args, const AttnTensor& t, cl_mem fallback) {
  args.add(t.mem ? t.mem : fallback).add<cl_ulong>(t.offset);
  args.add(Strides{t.sb, t.sh, t.sl, t.sd});
}

void add_common(KernelArgs& args, const AttnShape& s, DType compute, const AttnTensor& Q, const AttnTensor& K,
                const AttnTensor& V, const AttnTensor& M, const AttnTensor& MF) {
  args.add<cl_int>(static_cast<cl_int>(s.L)).add<cl_int>(static_cast<cl_int>(s.S));
  args.add<cl_int>(static_cast<cl_int>(s.Hq)).add<cl_int>(static_cast<cl_int>(s.Hq / s.Hk));
  if (compute == DType::F64)
    args.add<cl_double>(s.scale);
  else
    args.add<cl_float>(static_cast<float>(s.scale));
  args.add<cl_int>(s.causal ? 1 : 0);
  add_tensor(args, Q, nullptr);
  add_tensor(args, K, nullptr);
  add_tensor(args, V, nullptr);
  add_tensor(args, M, Q.mem);  // unread without a mask; any valid buffer
  if (s.has_mask && !MF.mem) throw Error("attention: a mask needs its block flags (attention_mask_blocks)");
  add_tensor(args, MF, Q.mem);
}

void add_dropout(KernelArgs& args, const AttnShape& s, DType compute) {
  if (s.dropout <= 0) return;
  // In the compute type: 1 / (1 - p) of float64 kernels is exact to float64.
  if (compute == DType::F64)
    args.add<cl_double>(s.dropout);
  else
    args.add<cl_float>(static_cast<float>(s.dropout));
  args.add<cl_ulong>(s.seed).add<cl_ulong>(s.offset);
}

void check(const Context& ctx, const AttnShape& s, DType dtype) {
  if (!(s.dropout >= 0 && s.dropout < 1)) throw Error("attention: dropout probability must be in [0, 1)");
  if (s.Hk <= 0 || s.Hq % s.Hk != 0) throw Error("attention: query heads must be a multiple of key/value heads");
  if (s.D > kAttnMaxHeadDim || s.DV > kAttnMaxHeadDim) throw Error("attention: head dim above 512");
  if (compute_dtype(dtype) == DType::F64 && !ctx.info().fp64)
    throw Error("attention: device '" + ctx.info().name + "' does not support float64 (no cl_khr_fp64)");
  if (s.L > INT32_MAX || s.S > INT32_MAX || s.B * s.Hq > 65535LL * 65535LL)
    throw Error("attention: sequence or batch too large");
}

} // namespace

void attention_forward(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, const AttnTensor& Q,
                       const AttnTensor& K, const AttnTensor& V, const AttnTensor& M, const AttnTensor& MF,
                       const AttnTensor& O, cl_mem lse, uint64_t lse_offset) {
  check(ctx, s, dtype);
  if (s.B * s.Hq * s.L == 0) return;
  // The matrix engine where the device has the kind (attention_mma.cpp); same arguments and grid shape.
  const detail::AttnMmaKernel mk = detail::attention_mma_forward(ctx, s, dtype, Q, K, V);
  if (mk.kernel) {
    std::lock_guard<std::mutex> lock(*mk.m);
    KernelArgs args(mk.kernel);
    add_common(args, s, DType::F32, Q, K, V, M, MF);
    add_tensor(args, O, nullptr);
    args.add(lse).add<cl_ulong>(lse_offset);
    add_dropout(args, s, DType::F32);
    size_t global[3] = {mk.threads, static_cast<size_t>(ceil_div(s.L, mk.rows)), static_cast<size_t>(s.B * s.Hq)};
    size_t local[3] = {mk.threads, 1, 1};
    launch_nd(q, mk.kernel, 3, global, local, "attention_forward_mma");
    return;
  }
  Kernels& k = kernels_for(ctx, dtype, s.D, s.DV, s.has_mask, s.dropout > 0, Pass::Forward,
                           vec_ok(dtype, s.D, s.DV, {&Q, &K, &V}));
  std::lock_guard<std::mutex> lock(k.m);
  const Layout& l = k.layout;
  KernelArgs args(k.a);
  add_common(args, s, compute_dtype(dtype), Q, K, V, M, MF);
  add_tensor(args, O, nullptr);
  args.add(lse).add<cl_ulong>(lse_offset);
  add_dropout(args, s, compute_dtype(dtype));
  const size_t nt = l.bq ? static_cast<size_t>(l.bq / 4 * l.ntc) : static_cast<size_t>(l.br) * l.tpr;
  const int64_t rows = l.bq ? l.bq : l.br;
  size_t global[3] = {nt, static_cast<size_t>(ceil_div(s.L, rows)), static_cast<size_t>(s.B * s.Hq)};
  size_t local[3] = {nt, 1, 1};
  launch_nd(q, k.a, 3, global, local, "attention_forward");
}

void attention_prepare_backward(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                                const AttnTensor& K, const AttnTensor& V) {
  if (s.B * s.Hq * s.L == 0) return;
  const int64_t D = s.D, DV = s.DV;
  const bool vec = vec_ok(dtype, D, DV, {&Q, &K, &V});
  const bool mask = s.has_mask, dropout = s.dropout > 0;
  // The matrix-engine passes (the gradient taken to be laid out like Q), and the FMA kernels only where one
  // of them does not run.
  build_in_background(ctx.info(), [&ctx, s, dtype, Q, K, V, D, DV, mask, dropout, vec] {
    if (s.S > 0 && detail::attention_mma_onepass(ctx, s, dtype, Q, K, V, Q).kernel) return;  // one kernel
    const bool dq = detail::attention_mma_backward(ctx, s, dtype, Q, K, V, Q, false).kernel != nullptr;
    const bool kv = detail::attention_mma_backward(ctx, s, dtype, Q, K, V, Q, true).kernel != nullptr;
    if (!dq || !kv) kernels_for(ctx, dtype, D, DV, mask, dropout, Pass::Backward, vec);
  });
}

void attention_backward(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, const AttnTensor& Q,
                        const AttnTensor& K, const AttnTensor& V, const AttnTensor& M, const AttnTensor& MF,
                        const AttnTensor& dO,
                        cl_mem lse, uint64_t lse_offset, cl_mem delta, uint64_t delta_offset, const AttnTensor& dQ,
                        const AttnTensor& dK, const AttnTensor& dV, const AttnBwdWork& work) {
  check(ctx, s, dtype);
  const DType compute = compute_dtype(dtype);
  const bool want_dq = s.B * s.Hq * s.L > 0 && dQ.mem, want_kv = s.B * s.Hk * s.S > 0 && dK.mem && dV.mem;
  auto add_args = [&](KernelArgs& args, bool kv) {  // the dq / dk-dv passes' arguments, any kernel
    add_common(args, s, compute, Q, K, V, M, MF);
    add_tensor(args, dO, nullptr);
    args.add(lse).add<cl_ulong>(lse_offset).add(delta).add<cl_ulong>(delta_offset);
    if (kv) {
      add_tensor(args, dK, nullptr);
      add_tensor(args, dV, nullptr);
    } else {
      add_tensor(args, dQ, nullptr);
    }
    add_dropout(args, s, compute);
  };
  // One pass for all three where the caller gave the one-pass kernel's scratch (attention_backward_work).
  if (want_dq && want_kv && work.counters && work.acc) {
    const detail::AttnMmaKernel m = detail::attention_mma_onepass(ctx, s, dtype, Q, K, V, dO);
    if (m.kernel) {
      std::lock_guard<std::mutex> lock(*m.m);
      KernelArgs args(m.kernel);
      add_common(args, s, compute, Q, K, V, M, MF);
      add_tensor(args, dO, nullptr);
      args.add(lse).add<cl_ulong>(lse_offset).add(delta).add<cl_ulong>(delta_offset);
      add_tensor(args, dK, nullptr);
      add_tensor(args, dV, nullptr);
      add_tensor(args, dQ, nullptr);
      args.add(work.counters).add<cl_ulong>(work.counters_offset).add(work.acc).add<cl_ulong>(work.acc_offset);
      add_dropout(args, s, compute);
      size_t global[3] = {m.threads, static_cast<size_t>(ceil_div(s.S, m.rows)), static_cast<size_t>(s.B * s.Hk)};
      size_t local[3] = {m.threads, 1, 1};
      launch_nd(q, m.kernel, 3, global, local, "attention_backward_onepass_mma");
      return;
    }
  }
  // Each pass on the matrix engine where it runs (attention_mma.cpp), else on the FMA kernels (built only then).
  const detail::AttnMmaKernel mq = want_dq ? detail::attention_mma_backward(ctx, s, dtype, Q, K, V, dO, false)
                                           : detail::AttnMmaKernel();
  const detail::AttnMmaKernel mkv = want_kv ? detail::attention_mma_backward(ctx, s, dtype, Q, K, V, dO, true)
                                            : detail::AttnMmaKernel();
  for (const detail::AttnMmaKernel* m : {&mq, &mkv}) {
    if (!m->kernel) continue;
    const bool kv = m == &mkv;
    std::lock_guard<std::mutex> lock(*m->m);
    KernelArgs args(m->kernel);
    add_args(args, kv);
    size_t global[3] = {m->threads, static_cast<size_t>(ceil_div(kv ? s.S : s.L, m->rows)),
                        static_cast<size_t>(s.B * (kv ? s.Hk : s.Hq))};
    size_t local[3] = {m->threads, 1, 1};
    launch_nd(q, m->kernel, 3, global, local, kv ? "attention_backward_dkdv_mma" : "attention_backward_dq_mma");
  }
  if ((!want_dq || mq.kernel) && (!want_kv || mkv.kernel)) return;
  Kernels& k = kernels_for(ctx, dtype, s.D, s.DV, s.has_mask, s.dropout > 0, Pass::Backward,
                           vec_ok(dtype, s.D, s.DV, {&Q, &K, &V, &dO}));
  std::lock_guard<std::mutex> lock(k.m);
  const Layout& l = k.layout;
  size_t nt = static_cast<size_t>(l.br) * l.tpr;
  if (want_dq && !mq.kernel) {
    KernelArgs args(k.a);
    add_args(args, false);
    const Layout& t = k.dq_layout;
    const size_t dq_nt = t.bq ? static_cast<size_t>(t.bq / 4 * t.ntc) : nt;
    const int64_t dq_rows = t.bq ? t.bq : l.br;
    size_t global[3] = {dq_nt, static_cast<size_t>(ceil_div(s.L, dq_rows)), static_cast<size_t>(s.B * s.Hq)};
    size_t dq_local[3] = {dq_nt, 1, 1};
    launch_nd(q, k.a, 3, global, dq_local, t.bq ? "attention_backward_dq_tiled" : "attention_backward_dq");
  }
  if (want_kv && !mkv.kernel) {
    KernelArgs args(k.b);
    add_args(args, true);
    const Layout& t = k.dkdv_layout;
    const size_t kv_nt = t.bq ? static_cast<size_t>(t.bk / 4 * t.ntc) : nt;
    const int64_t kv_rows = t.bq ? t.bk : l.br;
    size_t global[3] = {kv_nt, static_cast<size_t>(ceil_div(s.S, kv_rows)), static_cast<size_t>(s.B * s.Hk)};
    size_t kv_local[3] = {kv_nt, 1, 1};
    launch_nd(q, k.b, 3, global, kv_local, t.bq ? "attention_backward_dkdv_tiled" : "attention_backward_dkdv");
  }
}

void attention_backward_work(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                             const AttnTensor& K, const AttnTensor& V, const AttnTensor& dO, uint64_t& counters,
                             uint64_t& acc_floats, int& acc_fill) {
  check(ctx, s, dtype);
  counters = acc_floats = 0;
  acc_fill = 0;
  if (s.B * s.Hq * s.L == 0 || s.B * s.Hk * s.S == 0) return;
  const detail::AttnMmaKernel m = detail::attention_mma_onepass(ctx, s, dtype, Q, K, V, dO);
  if (!m.kernel) return;
  counters = 1 + static_cast<uint64_t>(s.B * s.Hq * ceil_div(s.L, m.tile));  // the ticket, then one per query tile
  acc_floats = static_cast<uint64_t>(s.B * s.Hq * s.L * s.D);
  acc_fill = m.atomic ? 2 : m.emulated ? 1 : 0;
}

void attention_dropout_mask(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, cl_mem out,
                            uint64_t out_offset) {
  check(ctx, s, dtype);
  if (s.dropout <= 0) throw Error("attention_dropout_mask: no dropout");
  uint64_t n = static_cast<uint64_t>(s.B * s.Hq * s.L * s.S);
  if (n == 0) return;
  Kernels& k = kernels_for(ctx, dtype, s.D, s.DV, s.has_mask, true, Pass::Forward, false);
  std::lock_guard<std::mutex> lock(k.m);
  KernelArgs args(k.b);
  args.add<cl_int>(static_cast<cl_int>(s.L)).add<cl_int>(static_cast<cl_int>(s.S)).add<cl_ulong>(n);
  args.add(out).add<cl_ulong>(out_offset);
  add_dropout(args, s, compute_dtype(dtype));
  launch_1d(q, k.b, n, ctx.work_group_size(256), "attention_dropout_mask");
}

} // namespace dlprim
