// One kernel per (element size, input count): the coordinates of an output element pick the last
// input starting at or before it along the cat dim. Our own code.
#include <dlprim/cat.h>
#include <dlprim/embedded.h>

#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

namespace dlprim {

namespace {

const char* bits_type(int bytes) {
  switch (bytes) {
    case 1: return "uchar";
    case 2: return "ushort";
    case 4: return "uint";
    case 8: return "ulong";
    default: throw Error("cat: unsupported element size " + std::to_string(bytes));
  }
}

std::string program_text(int bytes, int count) {
  const char* t = bits_type(bytes);
  std::ostringstream s;
  s << kernel_source("common");
  s << "__kernel void dl_cat(ulong n, int rank, int dim, dl_dims64 shape, __global " << t
    << "* y_p, ulong y_o, dl_dims64 y_s";
  for (int k = 0; k < count; ++k)
    s << ", __global const " << t << "* x" << k << "_p, ulong x" << k << "_o, dl_dims64 x" << k << "_s, long x" << k
      << "_start";
  s << ") {\n  ulong idx = get_global_id(0);\n  if (idx >= n) return;\n"
    << "  long c[8];\n  { ulong rem = idx;\n    for (int d = rank - 1; d >= 0; --d) {\n"
    << "      ulong sz = (ulong)shape.v[d]; ulong q = rem / sz; c[d] = (long)(rem - q * sz); rem = q;\n"
    << "    }\n  }\n  long off_y = 0;\n  for (int d = 0; d < rank; ++d) off_y += c[d] * y_s.v[d];\n"
    << "  long cd = c[dim];\n";
  for (int k = count - 1; k >= 0; --k) {
    std::string x = "x" + std::to_string(k);
    s << "  " << (k == count - 1 ? "" : "else ") << "if (" << (k == 0 ? "1" : "cd >= " + x + "_start") << ") {\n"
      << "    c[dim] = cd - " << x << "_start;\n    long o = (long)" << x << "_o;\n"
      << "    for (int d = 0; d < rank; ++d) o += c[d] * " << x << "_s.v[d];\n"
      << "    y_p[(long)y_o + off_y] = " << x << "_p[o];\n  }\n";
  }
  s << "}\n";
  return s.str();
}

struct Kernel {
  std::mutex m;
  cl_kernel k = nullptr;
};

} // namespace

void cat(const Context& ctx, cl_command_queue q, int elem_bytes, const RowMajorShape& shape, int dim,
         const StridedOperand& out, const CatInput* in, int count) {
  if (count < 1 || count > kCatMaxInputs) throw Error("cat: 1 to 4 inputs per launch");
  if (shape.rank > kMaxDims || dim < 0 || dim >= shape.rank) throw Error("cat: bad rank or dim");
  uint64_t n = shape.numel();
  if (n == 0) return;
  using Key = std::tuple<cl_context, int, int>;
  static std::mutex map_mutex;
  static std::map<Key, Kernel> cache;
  Kernel* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[Key(ctx.context(), elem_bytes, count)];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->k) k->k = create_kernel(ctx.program(program_text(elem_bytes, count)), "dl_cat");
  KernelArgs args(k->k);
  args.add<cl_ulong>(n).add<cl_int>(shape.rank).add<cl_int>(dim);
  add_dims(args, shape.sizes, shape.rank);
  args.add(out.mem).add<cl_ulong>(out.offset);
  add_dims(args, out.strides, shape.rank);
  for (int i = 0; i < count; ++i) {
    args.add(in[i].mem).add<cl_ulong>(in[i].offset);
    add_dims(args, in[i].strides, shape.rank);
    args.add<cl_long>(in[i].start);
  }
  launch_1d(q, k->k, n, ctx.work_group_size(256), "cat");
}

} // namespace dlprim
