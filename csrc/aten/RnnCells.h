// The fused recurrent-cell launches of Rnn.cpp (one table of elementwise ops), for the cell
// operators there and the whole-layer LSTM in RnnLayer.cpp.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <vector>

namespace pytorch_ocl {

// Rows of Rnn.cpp's OCL_RNN_OPS table, in its order (Rnn.cpp checks the names).
enum RnnOp {
  R_rnn_gate_sum,
  R_rnn_gate_sum_nobias,
  R_lstm_cell,
  R_lstm_cell_backward,
  R_gru_cell,
  R_gru_cell_nobias,
  R_gru_cell_sum,
  R_gru_cell_backward,
  R_gru_cell_backward_sum,
};

// One launch of `id`: outputs and inputs are ocl views (of different dtypes when 16-bit storage
// meets float temporaries) or CPU scalars; views of one buffer may interleave and an output may be
// exactly an input, so TensorIterator's overlap checks are off.
void rnn_launch(RnnOp id, const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins,
                c10::ScalarType compute);

} // namespace pytorch_ocl
