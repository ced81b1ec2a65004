// The pointwise op table as data, for pytorch_ocl._C._pointwise_ops() (tests parametrise from it).
#pragma once
#include <string>
#include <tuple>
#include <vector>

namespace pytorch_ocl {

// One entry per row: (id, kind, aten name, input dtypes, overloads registered for this torch).
using PointwiseRowInfo =
    std::tuple<std::string, std::string, std::string, std::vector<std::string>, std::vector<std::string>>;
std::vector<PointwiseRowInfo> pointwise_op_table();

} // namespace pytorch_ocl
