#!/usr/bin/env bash
# One device-tool call on the lent NVIDIA machine: build, then the checks and benchmarks named by
# the first argument, each under its own time limit, logs and tables under $OUT (or results/).
#
#   bash scripts/gpu_session.sh validate    # validate_network.py, 19 torchvision networks (about 5 min)
#   bash scripts/gpu_session.sh models      # benchmarks/models.py, 8 networks vs CUDA (about 6 min)
#   bash scripts/gpu_session.sh kernels     # layers.py + conv.py tables
#   bash scripts/gpu_session.sh suite       # the test suite on the GPU, gemm.py and overhead.py tables
#   bash scripts/gpu_session.sh tests       # the test suite on the GPU alone
#   bash scripts/gpu_session.sh gemm        # GEMM / conv tests on the GPU, resnet50 conv table, overhead.py
#   bash scripts/gpu_session.sh attention   # tests/test_attention.py, benchmarks/transformer.py (SDPA vs CUDA)
#   bash scripts/gpu_session.sh profile [NETS]  # profile_model.py (kernels, idle gaps, host time) per network
#   bash scripts/gpu_session.sh verify      # matrix-engine probes, RNN/autocast tests, transformer.py with models
#   bash scripts/gpu_session.sh mma         # matrix-engine GEMM tests on the real instruction, gemm.py per format
#   bash scripts/gpu_session.sh attn_bwd    # tiled attention backward layouts (dq, dK/dV) timed; attention tests
#   bash scripts/gpu_session.sh mma_configs  # gemm_mma tests native, each mma tile config vs cuBLAS (gemm_configs.py)
#   bash scripts/gpu_session.sh helpers      # compile / new ops / cache tests on the GPU, cold_start.py, compiled models
#   bash scripts/gpu_session.sh cnn_defaults  # models.py with torch's defaults on both devices (TF32 convolutions)
#   bash scripts/gpu_session.sh cnn_bf16      # models.py under bfloat16 autocast on both devices
#   bash scripts/gpu_session.sh attn_mma      # attention on mma.sync: native tests, SDPA vs CUDA with it on / off
#   bash scripts/gpu_session.sh attn128       # native mma attention tests, D128 fwd+bwd: engine / FMA / 4-warp split
#   bash scripts/gpu_session.sh decode_bf16   # decode step vs CUDA (graphs.py --ref cuda), random tuning, bf16 CNNs
#   bash scripts/gpu_session.sh transformer_bf16  # transformer.py --models --amp bf16 vs CUDA autocast
#   bash scripts/gpu_session.sh coldprobe     # GPT-2 small's first step by op; do builds run in parallel processes?
#   bash scripts/gpu_session.sh compiled      # torch.compile vs eager ocl vs CUDA compiled: GPT-2, BERT, resnet50
#   bash scripts/gpu_session.sh profile_tf    # GPT-2 / BERT steps by kernel: eager, compiled, bf16 (vs CUDA)
#   bash scripts/gpu_session.sh ddp2_scaling  # (2-GPU kind) GPT-2 DDP 1 -> 2 GPUs per communication mode, CUDA/NCCL
#   bash scripts/gpu_session.sh ddp2_more     # (2-GPU kind) resnet50 DDP per mode, gloo lanes, all_reduce vs NCCL
#   bash scripts/gpu_session.sh cold30        # fresh machine: GPT-2 small's first step, speculation on / off
#   bash scripts/gpu_session.sh bert_kernels  # compiled BERT step by kernel, the slowest generated reductions' source
#   bash scripts/gpu_session.sh tests_half K [N [S]]  # part K of N (default 2) of the test files, at most S s (470)
#   bash scripts/gpu_session.sh ddp2_shm      # (2-GPU kind) GPT-2 / resnet50 DDP, 1 GPU then 2 over shared memory; all_reduce vs NCCL
#   bash scripts/gpu_session.sh ddp2_bf16     # (2-GPU kind) GPT-2 DDP 1 -> 2 GPUs, gradients in bf16 (compress hook) and fp32
#   bash scripts/gpu_session.sh ddp2_pieces   # (2-GPU kind) GPT-2 DDP on 2 GPUs with shm pieces of 4 MiB, 1 MiB, 256 KiB
#   bash scripts/gpu_session.sh ddp2_31       # (2-GPU kind) GPT-2 DDP 1 -> 2 GPUs, shm stage threads on vs off, traced all_reduce
#   bash scripts/gpu_session.sh ddp2_shm_gloo # (2-GPU kind, warm) the same 2-GPU runs over gloo
#   bash scripts/gpu_session.sh ddp2_shm_trace # (2-GPU kind) shm all_reduce per stage, 1 vs 3 slot sets, host-only probe, copies
#   bash scripts/gpu_session.sh lstm          # fused / GEMM + cell LSTM step tests, LSTM LM step per path vs CUDA
#   bash scripts/gpu_session.sh linalg_fft    # issue 17: fft.py (VkFFT vs cuFFT) and linalg.py (vs cuSOLVER), CPU too
#   bash scripts/gpu_session.sh mask_blocks   # attention mask block flags: native attention tests, masked SDPA, BERT
#   bash scripts/gpu_session.sh lstm35        # fused LSTM steps with K split over 1 / 2 / 4 slices: native tests, LM step vs CUDA
#   bash scripts/gpu_session.sh prof35        # BERT / GPT-2 training steps by kernel vs CUDA, batch-1 decode host cost per token
#   bash scripts/gpu_session.sh gru           # fused GRU steps: native GRU / LSTM tests, GRU LM step per K-slice count vs CUDA
#   bash scripts/gpu_session.sh atomic35      # one-pass attention backward with float-atomic dq: native tests, SDPA fwd+bwd atomic / ordered / two passes, GPT-2 / BERT
#   bash scripts/gpu_session.sh rnn35         # LSTM and GRU LM steps (fused, default K-slices) vs CUDA, each twice
#   bash scripts/gpu_session.sh sweep36       # attention backward layouts (warps, tiles, head-dim split, register caps) with ptxas counts
#   bash scripts/gpu_session.sh check36       # mma attention + RNN tests natively, LSTM / GRU LM steps and SDPA vs CUDA
#   bash scripts/gpu_session.sh check37       # wgmma tests natively, bf16/fp16 vs cuBLAS, models under bf16 autocast
#   bash scripts/gpu_session.sh wgmma37       # float32 on wgmma: native tests + networks, fp32/TF32 vs cuBLAS, fp32 models, BERT bf16
#   bash scripts/gpu_session.sh native37      # float32 wgmma natively: tests, custom conv example, fp32/TF32 vs cuBLAS
#   bash scripts/gpu_session.sh final37       # 4 CNNs fp32, linalg vs cuSOLVER, models under bf16 autocast
#   bash scripts/gpu_session.sh build41       # fresh machine: GPT-2 small cold step traced by kernel; builds whole vs by kernel
#   bash scripts/gpu_session.sh check40       # engine decided before tile tuning: native tests, GPT-2 cold, GPT-2 / BERT
#   bash scripts/gpu_session.sh cold42        # fresh machine: GPT-2 cold first step, tile tunings deferred vs on the spot
#   bash scripts/gpu_session.sh ddp2_peer     # (2-GPU kind) DDP with each GPU reading the other's memory: tests, GPT-2 1 -> 2 GPUs traced, CUDA
#   bash scripts/gpu_session.sh ddp2_fd       # (2-GPU kind) imported descriptors: driver's ownership, tests, GPT-2 / resnet50 1 -> 2 GPUs, CUDA
#   bash scripts/gpu_session.sh cold40        # fresh machine: GPT-2 cold first step, engine timed vs size rule; resnet50 layers
#   bash scripts/gpu_session.sh attn128_fwd   # D128 float32 attention: the engine's forward layouts (warps, keys a tile) timed
#   bash scripts/gpu_session.sh splits40      # split-K at 4 / 8 groups per compute unit: resnet50 TF32 layers by kernel
#
# The machine goes cold 30 s after a call, so every call builds (about 100 s; scripts/gpu_build.sh).
# Progress bars are stripped from the logs; each script prints its rows as they land, so a part cut
# short by its limit still reports what it measured.
set -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${OUT:-results}
mkdir -p "$out"
bash scripts/gpu_build.sh > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
export OCL_ICD_FILENAMES=libnvidia-opencl.so.1 PYTHONUNBUFFERED=1 PYTORCH_OCL_STRICT=1
# The OpInfo and autocast tests import torch.testing._internal, which needs expecttest (not installed there).
ls .carry/expecttest-*.whl >/dev/null 2>&1 && python3 -m pip install -q --no-deps .carry/expecttest-*.whl
bars='it/s\]|s/it\]|net/s\]|s/net\]|layer/s\]|s/layer\]|Warn'

run() {  # run NAME SECONDS COMMAND...: the command's output, progress bars removed, to $out/NAME.log
  # In a session of its own, so that a command past its limit is stopped with everything it started (torchrun's
  # ranks hung in a collective would otherwise outlive it and hold the call to the end of its time)
  local name=$1 limit=$2
  shift 2
  echo "== $name (limit ${limit}s): $*"
  setsid "$@" > "$out/$name.raw" 2>&1 &
  local pid=$! t=0
  while kill -0 "$pid" 2>/dev/null && [ "$t" -lt "$limit" ]; do sleep 1; t=$((t + 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    echo "($name: past its ${limit} s, interrupted)" >> "$out/$name.raw"
    kill -INT -- "-$pid" 2>/dev/null
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  fi
  kill -KILL -- "-$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  tr '\r' '\n' < "$out/$name.raw" | grep -Ev "$bars" > "$out/$name.log"
  rm -f "$out/$name.raw"
  grep -Ev '^ |^Traceback|File "|\^' "$out/$name.log" | tail -30
}

# examples/ddp_train.py's per-GPU workloads of the 2-GPU modes (issue 20), and their launcher
gargs="--model gpt2 --batch 8 --seq-len 1024 --n-layer 12 --n-embd 768 --n-head 12 --vocab 50257 --steps 13 --warmup 3"
rargs="--model resnet50 --batch 64 --image-size 224 --steps 13 --warmup 3"
tr="torchrun --standalone --nproc-per-node 2"

case "${1:-validate}" in
  validate)
    run validate 420 python3 validate_network.py --device ocl:0 --out "$out/validate.md"
    ;;
  models)
    run models 470 python3 benchmarks/models.py --out "$out/models.md"
    ;;
  kernels)
    run layers 90 python3 benchmarks/layers.py --ref cuda --out "$out/layers.md"
    run conv 200 python3 benchmarks/conv.py --ref cuda --nets resnet18,mobilenet_v2,vgg16 --batches 32,1 \
      --out "$out/conv.md"
    ;;
  tests)  # the whole test suite on the GPU (one call)
    run tests 470 python3 -m pytest -q -n 14 -p no:cacheprovider tests
    ;;
  suite)
    # 12 xdist workers: the whole suite in about 5 min on the 16-core machine (one process: > 1 h).
    run tests 440 python3 -m pytest -q -n 14 -p no:cacheprovider tests
    run gemm 150 python3 benchmarks/gemm.py --ref cuda --peak-tflops 67 --out "$out/gemm.md"
    run overhead 90 python3 benchmarks/overhead.py --ref cuda --out "$out/overhead.md"
    ;;
  gemm)
    run gemm_tests 200 python3 -m pytest -q tests/test_gemm.py tests/test_conv.py
    run conv_resnet50 200 python3 benchmarks/conv.py --ref cuda --nets resnet50 --batches 32 --out "$out/conv_resnet50.md"
    run overhead 90 python3 benchmarks/overhead.py --ref cuda --out "$out/overhead.md"
    ;;
  attention)
    # 8 xdist workers: the NVIDIA compiler builds each head-dim/dtype/mask variant (no disk cache there).
    run attention_tests 300 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_attention.py tests/test_rnn.py \
      tests/test_transformers_models.py
    run transformer 400 python3 benchmarks/transformer.py --ref cuda --models --out "$out/transformer.md"
    ;;
  verify)  # matrix-engine probes, whole-layer RNN / autocast tests, SDPA cases and model rows vs CUDA
    # (limits sum to ~480 s after the ~100 s build: one call)
    run matrix_engine 30 python3 -c "import torch; print(torch.ocl.matrix_engine())"
    run verify_tests 120 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_rnn.py tests/test_autocast.py
    run transformer_models 330 python3 benchmarks/transformer.py --ref cuda --models --out "$out/transformer.md"
    ;;
  mma)  # the matrix-engine GEMM (gemm_mma.cl) with the real mma.sync: tests, then bf16/fp16/tf32/3xtf32 vs cuBLAS
    run matrix_engine 30 python3 -c "import torch; print(torch.ocl.matrix_engine())"
    export PYTORCH_OCL_MMA_TEST=native
    run mma_tests 170 python3 -m pytest -q -n 8 -p no:cacheprovider \
      tests/test_gemm_mma.py tests/test_gemm.py tests/test_conv.py tests/test_conv_winograd.py
    shapes="square 1024,square 4096,bert,attn"
    for m in bfloat16:exact float16:exact float32:tf32 float32:3xtf32 float32:exact; do
      run "gemm_${m/:/_}" 60 python3 benchmarks/gemm.py --ref cuda --dtype "${m%%:*}" --math "${m##*:}" \
        --only "$shapes" --out "$out/gemm_${m/:/_}.md"
    done
    ;;
  mma_configs)  # matrix-engine tests on the real instruction, then every 16-bit / tf32 mma config forced, vs cuBLAS
    run matrix_engine 30 python3 -c "import torch; print(torch.ocl.matrix_engine())"
    export PYTORCH_OCL_MMA_TEST=native
    run mma_tests 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_gemm_mma.py
    unset PYTORCH_OCL_MMA_TEST
    c16=";mma 128x128x64 w2x4 local;mma 128x128x32 w2x2 async2;mma 128x128x32 w2x2 async3;mma 128x128x32 w2x4 async3"
    c16="$c16;mma 128x256x32 w2x4 async2;mma 256x128x32 w4x2 async2;mma 128x64x32 w2x2 async4"
    run configs_bf16 150 python3 benchmarks/gemm_configs.py --dtype bfloat16 --configs "$c16" --out "$out/configs_bf16.md"
    c32=";mma 128x128x16 w2x2 local2;mma 128x128x16 w2x2 async2;mma 128x128x16 w2x4 async2;mma 128x64x16 w2x2 async3"
    c32="$c32;mma 64x128x16 w2x2 async3"
    run configs_tf32 120 python3 benchmarks/gemm_configs.py --dtype float32 --math tf32 --configs "$c32" \
      --out "$out/configs_tf32.md"
    ;;
  helpers)  # torch.compile, the new op families, graphs, parallel builds / cache CLI on the GPU; graph replay of a
    # decode step; cold start; compiled models
    run helper_tests 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_compile.py tests/test_conv3d.py \
      tests/test_grid_sample.py tests/test_distance_margin.py tests/test_embedding_bag.py tests/test_mode_gcd.py \
      tests/test_segment_rrelu.py tests/test_fractional_pool_trace.py tests/test_histogram.py tests/test_ctc_loss.py \
      tests/test_batch_norm_update.py tests/test_parallel_builds.py tests/test_cache_cli.py tests/test_graphs.py
    run gcd 40 python3 -X faulthandler -m pytest -q -x -p no:cacheprovider tests/test_mode_gcd.py -k corners
    run graphs 90 python3 benchmarks/graphs.py
    run cold_start 130 python3 benchmarks/cold_start.py --threads 16 --out "$out/cold_start.md"
    run compiled 120 python3 benchmarks/models.py --compile --nets resnet18 --out "$out/compiled.md"
    ;;
  attn_bwd)  # tiled attention backward layouts timed (dq and dK/dV passes), the attention tests on the GPU
    run attn_layouts 170 python3 benchmarks/attention_layouts.py --fwd "" \
      --bwd-tiled "0;dkdv;dkdv=32,32,16;dkdv=16,64,8;dkdv=16,64,16;1;1+dkdv=32,32,16;1+dkdv=16,64,16" \
      --cases "8,12,1024,64,1;8,12,1024,64,0;4,16,4096,64,1" --out "$out/attn_layouts.md"
    run attention_tests 250 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_attention.py tests/test_rnn.py
    ;;
  cnn_defaults)  # the 8 CNNs with torch's defaults on both devices (TF32 convolutions), inference + training
    run models_default 480 python3 benchmarks/models.py --math default --out "$out/models_default.md"
    ;;
  attn128)  # the engine's backward at head dims over 64 (warp-pair split): native tests, then the D128 case's
    # fwd+bwd and per-pass kernel times: engine default (split, 8 warps), FMA kernels, split on 4 warps
    PYTORCH_OCL_MMA_TEST=native run attn_mma_tests 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_attention_mma.py
    run attn128_fp32 100 python3 benchmarks/attention_layouts.py --fwd "" --mma "default;0;4,16,0" \
      --cases "8,12,2048,128,1;8,12,1024,128,0" --out "$out/attn128_fp32.md"
    run transformer_mma 170 python3 benchmarks/transformer.py --ref cuda --out "$out/transformer_mma.md"
    ;;
  attn128_bf16)  # the same D128 timings in bfloat16
    run attn128_bf16 100 python3 benchmarks/attention_layouts.py --fwd "" --mma "default;0;4,16,0" --dtype bfloat16 \
      --cases "8,12,2048,128,1;8,12,1024,128,0" --out "$out/attn128_bf16.md"
    ;;
  attn_mma)  # attention on mma.sync: its tests on the real instruction, then SDPA vs CUDA with it on (and off)
    PYTORCH_OCL_MMA_TEST=native run attn_mma_tests 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_attention_mma.py
    run transformer_mma 180 python3 benchmarks/transformer.py --ref cuda --out "$out/transformer_mma.md"
    PYTORCH_OCL_ATTN_MMA=0 run transformer_fma 120 python3 benchmarks/transformer.py --ref none --out "$out/transformer_fma.md"
    ;;
  decode_bf16)  # decode step vs CUDA (eager, graphs), random tuning reaching every conv path, CNNs under bf16 autocast
    run decode_graphs 90 python3 benchmarks/graphs.py --ref cuda
    run random_tuning 60 python3 -m pytest -q -p no:cacheprovider tests/test_random_tuning.py -k every_kind
    run models_bf16 330 python3 benchmarks/models.py --math bf16 --out "$out/models_bf16.md"
    ;;
  cnn_bf16)  # the 8 CNNs under bfloat16 autocast on both devices (torch's defaults otherwise)
    run models_bf16 480 python3 benchmarks/models.py --math bf16 --out "$out/models_bf16.md"
    ;;
  transformer_bf16)  # transformer.py --models under bfloat16 autocast on both devices (issue 16's GPT-2 target)
    run transformer_bf16 420 python3 benchmarks/transformer.py --ref cuda --models --amp bf16 --out "$out/transformer_bf16.md"
    ;;
  coldprobe)  # GPT-2 small's first step profiled by op (cold, warm), then its sources rebuilt in parallel processes
    rm -rf /tmp/cl_src && mkdir -p /tmp/cl_src
    COLD_START_PROFILE=1 PYTORCH_OCL_TRACE_BUILDS=/tmp/cl_src run cold_profile 300 python3 benchmarks/cold_start.py --nets gpt2small
    run build_processes 200 python3 benchmarks/build_processes.py /tmp/cl_src --count 16 --procs 16
    ;;
  lstm)  # the whole-layer LSTM's two step paths (PYTORCH_OCL_LSTM_FUSED) on the GPU, then the LM step per path
    run lstm_tests 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_lstm_fused.py tests/test_rnn.py
    run lstm_steps 200 python3 benchmarks/lstm_steps.py --ref cuda
    ;;
  linalg_fft)  # issue 17's targets: torch.fft vs cuFFT, torch.linalg vs cuSOLVER, both vs the CPU. Each script
    # gives every device (ocl, the cuda child, the cpu child) a --seconds budget, so the limits below hold
    # three budgets plus start-up; with the ~100 s build the call stays under 6 min.
    run fft 95 python3 benchmarks/fft.py --ref cuda,cpu --seconds 25 --out "$out/fft.md"
    run linalg 150 python3 benchmarks/linalg.py --ref cuda,cpu --seconds 45 --out "$out/linalg.md"
    ;;
  compiled)  # torch.compile on both devices: GPT-2 / BERT training steps, resnet50; GPU-only linalg checks first
    run checks 90 python3 -m pytest -q -n 6 -p no:cacheprovider tests/test_complex_linalg.py tests/test_linalg_ldl.py
    run transformer_compiled 330 python3 benchmarks/transformer.py --ref cuda --models --compile \
      --out "$out/transformer_compiled.md"
    run models_compiled 170 python3 benchmarks/models.py --compile --nets resnet50 --out "$out/models_compiled.md"
    ;;
  ddp2_scaling)  # (2-GPU kind) issue 20 in one call: GPT-2 small and resnet50, one GPU then two, ocl and CUDA/NCCL,
    # the communication modes (overlapped, waited, none), gloo lanes, all_reduce bandwidth against NCCL
    run gpt2_ocl_1gpu 100 python3 examples/ddp_train.py $gargs
    run gpt2_ocl_2gpu 70 $tr examples/ddp_train.py $gargs
    run gpt2_ocl_2gpu_waited 70 $tr examples/ddp_train.py $gargs --comm waited
    run gpt2_ocl_2gpu_none 70 $tr examples/ddp_train.py $gargs --comm none
    export TORCH_DEVICE_BACKEND_AUTOLOAD=0
    run gpt2_cuda_1gpu 60 python3 examples/ddp_train.py $gargs --device cuda
    run gpt2_cuda_2gpu 60 $tr examples/ddp_train.py $gargs --device cuda
    run r50_cuda_1gpu 50 python3 examples/ddp_train.py $rargs --device cuda
    run r50_cuda_2gpu 50 $tr examples/ddp_train.py $rargs --device cuda
    unset TORCH_DEVICE_BACKEND_AUTOLOAD
    grep -h -E "throughput|check" "$out"/*.log
    ;;
  ddp2_more)  # (2-GPU kind, warm after ddp2_scaling) resnet50 on ocl, gloo lanes, all_reduce bandwidth vs NCCL
    run r50_ocl_1gpu 120 python3 examples/ddp_train.py $rargs
    run r50_ocl_2gpu 70 $tr examples/ddp_train.py $rargs
    run r50_ocl_2gpu_waited 70 $tr examples/ddp_train.py $rargs --comm waited
    run r50_ocl_2gpu_none 70 $tr examples/ddp_train.py $rargs --comm none
    run allreduce_bw 120 python3 benchmarks/distributed.py --ref nccl --out "$out/distributed.md"
    for k in 1 8; do
      PYTORCH_OCL_DIST_SHM=0 PYTORCH_OCL_GLOO_LANES=$k run gpt2_ocl_2gpu_lanes$k 60 $tr examples/ddp_train.py $gargs
    done
    grep -h -E "throughput|check" "$out"/*.log
    ;;
  ddp2_peer)  # (2-GPU kind, first call) issue 20 through peer memory (_dist_peer.py: each GPU reads the other's
    # buffers in its own OpenCL context, no CUDA kernels): the distributed tests on 2 GPUs (peer and NCCL; the
    # failures' tracebacks shown), GPT-2 small on one GPU then two, traced (each step's exchanges, the longest split;
    # a timeline plot), CUDA's DDP in the same call. Warnings kept: every op family's first call warned in the 2-GPU
    # runs at c5a0c5c (not in one-GPU runs), text not seen
    bars='it/s\]|s/it\]'
    run dist_tests 200 python3 -m pytest -v -p no:cacheprovider -rf --tb=short tests/test_distributed.py \
      -k "peer or nccl or torchrun"
    grep -E "^(E |FAILED)" "$out/dist_tests.log" | head -40
    run gpt2_ocl_1gpu 100 python3 examples/ddp_train.py $gargs
    run gpt2_ocl_2gpu_peer 60 $tr examples/ddp_train.py $gargs --trace --trace-plot "$out/gpt2_2gpu_trace.png"
    export TORCH_DEVICE_BACKEND_AUTOLOAD=0
    run gpt2_cuda_1gpu 45 python3 examples/ddp_train.py $gargs --device cuda
    run gpt2_cuda_2gpu 45 $tr examples/ddp_train.py $gargs --device cuda
    unset TORCH_DEVICE_BACKEND_AUTOLOAD
    grep -h -E "throughput|check|past its|^trace rank 0" "$out"/gpt2*.log
    ;;
  ddp2_fd)  # (2-GPU kind) after the descriptor mend (ExternalMemory.cpp hands the driver a duplicate): whether the
    # driver takes an imported descriptor, the import and peer tests, then GPT-2 and resnet50 on one GPU and two
    # through peer memory with the kernel cache working (at 19c3677 every op's cache read failed in 2-GPU runs)
    bars='it/s\]|s/it\]'
    run interop 60 python3 scripts/probe_cuda_interop.py
    run dist_tests 120 python3 -m pytest -v -p no:cacheprovider -rf --tb=short tests/test_distributed.py \
      -k "import_leaves or kill-peer or matches_single_process and (peer or nccl)"
    grep -E "^(E |FAILED)" "$out/dist_tests.log" | head -20
    run gpt2_ocl_1gpu 100 python3 examples/ddp_train.py $gargs
    run gpt2_ocl_2gpu_peer 60 $tr examples/ddp_train.py $gargs
    run r50_ocl_1gpu 100 python3 examples/ddp_train.py $rargs
    run r50_ocl_2gpu_peer 80 $tr examples/ddp_train.py $rargs --trace
    export TORCH_DEVICE_BACKEND_AUTOLOAD=0  # CUDA's DDP in the same call (a process without pytorch_ocl)
    run gpt2_cuda_1gpu 45 python3 examples/ddp_train.py $gargs --device cuda
    run gpt2_cuda_2gpu 45 $tr examples/ddp_train.py $gargs --device cuda
    run r50_cuda_1gpu 45 python3 examples/ddp_train.py $rargs --device cuda
    run r50_cuda_2gpu 45 $tr examples/ddp_train.py $rargs --device cuda
    unset TORCH_DEVICE_BACKEND_AUTOLOAD
    grep -c "cache .* failed" "$out"/*.log
    grep -H -E "throughput|check|past its|driver took|left fd" "$out"/*.log
    ;;
  cold30)  # first thing on a fresh machine: GPT-2 small's real first step (driver cache on, empty), speculation
    # on then off (each with its own empty NVIDIA cache)
    for spec in 1 0; do
      rm -rf /tmp/nvcache$spec
      CUDA_CACHE_PATH=/tmp/nvcache$spec PYTORCH_OCL_SPECULATIVE_BUILDS=$spec \
        run cold_spec$spec 150 python3 benchmarks/cold_start.py --nets gpt2small
    done
    ;;
  bert_kernels)  # compiled BERT's training step by kernel, the slowest generated reductions' source
    rm -rf /tmp/torchinductor_$(whoami)
    run prof_bert_compiled 150 python3 benchmarks/profile_model.py --net bert --compile --top 12
    # the three slowest generated reductions: their graph nodes and OpenCL source, from the FX graph cache
    grep -oE "ocl_red_[0-9a-f]{12}" "$out/prof_bert_compiled.log" | awk '!seen[$0]++' | head -3 |
      python3 scripts/inductor_kernel_source.py /tmp/torchinductor_$(whoami) > "$out/slow_kernels.log"
    ;;
  tests_half)  # the test suite on the GPU in parts: `tests_half K [N [S]]` runs part K of N (default 2) of the test files
    # for at most S seconds (default 470),
    # taken round-robin in name order (neighbouring files, often of one family, land in different parts), `-rf` lists
    # the failures by name; N = 3 keeps each part inside one call (half 1 of 2 ran past 470 s at 8341ea9)
    k=${2:-1}
    nparts=${3:-2}
    part=$(LC_ALL=C ls tests/test_*.py | LC_ALL=C sort | awk -v k="$k" -v n="$nparts" '(NR - 1) % n == k - 1')
    # -v names each failure as it happens: a part cut by its limit loses pytest's closing summary; the slowest
    # tests are listed from PYTORCH_OCL_TEST_TIMES (conftest.py), written as each one ends
    PYTORCH_OCL_TEST_TIMES="$out/test_times_${k}of${nparts}.txt" run "tests_part${k}of${nparts}" "${4:-470}" \
      python3 -m pytest -v -n 14 -p no:cacheprovider -rf $part
    grep -E "(FAILED|ERROR) tests/" "$out/tests_part${k}of${nparts}.log" | sed 's/^\[gw[0-9]*\] *\[ *[0-9]*%\] *//' | sort -u
    echo "slowest:"; sort -rn "$out/test_times_${k}of${nparts}.txt" | head -25
    ;;
  ddp2_shm)  # (2-GPU kind) the shared-memory all-reduce between the 2 ranks (PYTORCH_OCL_DIST_SHM, default on):
    # GPT-2 small and resnet50 on one GPU, then on 2 GPUs overlapped (scaling in one call; the first run of each
    # model fills the kernel cache), then all_reduce bandwidth of shm, gloo and NCCL
    run gpt2_ocl_1gpu 100 python3 examples/ddp_train.py $gargs
    run gpt2_ocl_2gpu_shm 80 $tr examples/ddp_train.py $gargs
    run r50_ocl_1gpu 110 python3 examples/ddp_train.py $rargs
    run r50_ocl_2gpu_shm 70 $tr examples/ddp_train.py $rargs
    run allreduce_bw_shm 100 python3 benchmarks/distributed.py --ref nccl --max-mib 256 --iters 3 --out "$out/distributed_shm.md"
    grep -h -E "throughput|check" "$out"/*.log
    ;;
  ddp2_bf16)  # (2-GPU kind) GPT-2 small DDP with the gradients exchanged in bfloat16 (torch's bf16_compress_hook):
    # one GPU, then two over shared memory with and without the hook
    g31=${gargs/--steps 13 --warmup 3/--steps 9 --warmup 2}
    run gpt2_ocl_1gpu 90 python3 examples/ddp_train.py $g31
    run gpt2_ocl_2gpu_bf16 70 $tr examples/ddp_train.py $g31 --bf16-compress
    run gpt2_ocl_2gpu_fp32 70 $tr examples/ddp_train.py $g31
    grep -h -E "throughput|check" "$out"/gpt2*.log
    ;;
  ddp2_pieces)  # (2-GPU kind) GPT-2 small DDP on 2 GPUs with the shared-memory pieces (so each host copy) of 4 MiB,
    # 1 MiB and 256 KiB: do shorter copies let the training thread's launches in between?
    g31=${gargs/--steps 13 --warmup 3/--steps 9 --warmup 2}
    run gpt2_ocl_1gpu 90 python3 examples/ddp_train.py $g31
    for kib in 4096 1024 256; do
      PYTORCH_OCL_DIST_SHM_PIECE_KIB=$kib run gpt2_ocl_2gpu_piece$kib 60 $tr examples/ddp_train.py $g31
    done
    grep -h -E "throughput|check" "$out"/gpt2*.log
    ;;
  ddp2_31)  # (2-GPU kind) GPT-2 small DDP, one GPU then two over shared memory with a thread per stage (reader,
    # worker, writer: the default) and with the reads / write backs on the caller and the worker
    # (PYTORCH_OCL_DIST_SHM_STAGE_THREADS=0), then all_reduce bandwidth with one traced all_reduce per size, then
    # both paths interleaved per size and for a GPT-2-like burst of 20 x 25 MiB, traced (per-thread busy time)
    g31=${gargs/--steps 13 --warmup 3/--steps 9 --warmup 2}
    run gpt2_ocl_1gpu 90 python3 examples/ddp_train.py $g31
    run gpt2_ocl_2gpu_stages1 70 $tr examples/ddp_train.py $g31
    PYTORCH_OCL_DIST_SHM_STAGE_THREADS=0 run gpt2_ocl_2gpu_stages0 60 $tr examples/ddp_train.py $g31
    run allreduce_trace 80 python3 benchmarks/distributed.py --shm-trace --max-mib 256 --iters 3 --out "$out/distributed31.md"
    run shm_stages 90 python3 benchmarks/dist_shm_stages.py --trace
    grep -h -E "throughput|check" "$out"/gpt2*.log
    grep -h -E "^\||busy|stage threads" "$out"/shm_stages.log
    ;;
  ddp2_shm_gloo)  # (2-GPU kind, warm after ddp2_shm) the same 2-GPU runs with the all-reduce over gloo
    PYTORCH_OCL_DIST_SHM=0 run gpt2_ocl_2gpu_gloo 70 $tr examples/ddp_train.py $gargs
    PYTORCH_OCL_DIST_SHM=0 run r50_ocl_2gpu_gloo 70 $tr examples/ddp_train.py $rargs
    grep -h -E "throughput|check" "$out"/*.log
    ;;
  ddp2_shm_trace)  # (2-GPU kind) where the shared-memory all-reduce's time goes: per size (1..256 MiB) bandwidth
    # and one traced all_reduce's stages, one piece at a time (1 slot set: the old protocol) and pipelined (3 sets,
    # the default; 4 MiB pieces, then 1 MiB: 3 x 3 MiB touched per round, within the caches), then the host-only
    # probe (CPU tensors: the hand-offs alone)
    PYTORCH_OCL_DIST_SHM_SETS=1 run shm_trace_sets1 110 python3 benchmarks/distributed.py --shm-trace --max-mib 256 --iters 3 --out "$out/shm_sets1.md"
    run shm_trace_sets3 110 python3 benchmarks/distributed.py --shm-trace --max-mib 256 --iters 3 --out "$out/shm_sets3.md"
    PYTORCH_OCL_DIST_SHM_PIECE_KIB=1024 run shm_trace_1mib 110 python3 benchmarks/distributed.py --shm-trace --max-mib 256 --iters 3 --out "$out/shm_1mib.md"
    for sets in 1 3; do
      PYTORCH_OCL_DIST_SHM_SETS=$sets run "shm_probe_sets$sets" 60 python3 benchmarks/dist_shm_probe.py --iters 5
    done
    run shm_copies 60 python3 benchmarks/dist_shm_copies.py  # could the device copies use the segment directly?
    grep -h -E "MiB|shm trace" "$out"/shm_*.log
    ;;
  profile_tf)  # where GPT-2 / BERT training steps spend device time: eager, compiled, bf16 autocast (with CUDA's)
    run prof_bert 90 python3 benchmarks/profile_model.py --net bert --top 30
    run prof_bert_compiled 120 python3 benchmarks/profile_model.py --net bert --compile --top 30
    run prof_gpt2_compiled 110 python3 benchmarks/profile_model.py --net gpt2 --compile --top 30
    run prof_gpt2_bf16 130 python3 benchmarks/profile_model.py --net gpt2 --amp bf16 --ref cuda --top 30
    ;;
  mask_blocks)  # attention masks by block (issues 19, 15): tests/test_attention*.py natively (mma kernels on the
    # real instruction), SDPA B8 H12 L1024 D64 with no / all-ones / padding masks, flags on and off, fp32 and bf16
    # (fwd, fwd+bwd), then compiled BERT (its all-ones padding mask reaches SDPA). About 320 s after the build.
    PYTORCH_OCL_MMA_TEST=native run mask_tests 150 python3 -m pytest -q -n 8 -p no:cacheprovider \
      tests/test_attention.py tests/test_attention_mma.py tests/test_attention_mask_blocks.py
    run masks_fp32 30 python3 benchmarks/attention_masks.py --dtype float32 --out "$out/masks_fp32.md"
    run masks_bf16 30 python3 benchmarks/attention_masks.py --dtype bfloat16 --out "$out/masks_bf16.md"
    run prof_bert_compiled 110 python3 benchmarks/profile_model.py --net bert --compile --top 12
    ;;
  lstm35)  # the fused LSTM step kernels with each step's K split over slices of the group (PYTORCH_OCL_RNN_KSPLIT):
    # the LSTM tests natively, then the LSTM LM step per slice count vs CUDA
    run native_tests 150 python3 -m pytest -q -n 4 -p no:cacheprovider -rf --tb=short tests/test_lstm_fused.py \
      tests/test_rnn.py
    run lstm_steps 150 python3 benchmarks/lstm_steps.py --ref cuda --ksplit "1;2;4;" --fused-only
    ;;
  prof35)  # where BERT's and GPT-2's training steps (issue 15: >= 0.95 of CUDA) lose time by kernel against CUDA, and
    # batch-1 decoding's host cost per token (GPT-2 small)
    run prof_bert 120 python3 benchmarks/profile_model.py --net bert --ref cuda --top 20
    run prof_gpt2 120 python3 benchmarks/profile_model.py --net gpt2 --ref cuda --top 20
    run decode_overhead 150 python3 benchmarks/decode_overhead.py --gpt2-small --tokens 16 --top 25
    ;;
  gru)  # the fused GRU step kernels (PYTORCH_OCL_GRU_FUSED, K split per PYTORCH_OCL_RNN_KSPLIT): the GRU / LSTM
    # tests natively, then the GRU LM step per slice count and on the GEMM + cell path vs CUDA, the LSTM LM's default
    run native_tests 170 python3 -m pytest -q -n 4 -p no:cacheprovider -rf --tb=short tests/test_gru_fused.py \
      tests/test_lstm_fused.py tests/test_rnn.py
    run gru_steps 170 python3 benchmarks/lstm_steps.py --cell gru --ref cuda --ksplit "1;2;4;"
    run lstm_steps 90 python3 benchmarks/lstm_steps.py --ref cuda --fused-only
    ;;
  atomic35)  # the one-pass attention backward adding dq with float atomics (PYTORCH_OCL_ATTN_BWD_ONEPASS=atomic): the
    # one-pass tests on the real instruction, SDPA fwd+bwd atomic / ordered / two passes (fp32, bf16, BERT's shape
    # too), then GPT-2's and BERT's steps by kernel with it on, vs CUDA
    PYTORCH_OCL_MMA_TEST=native run attn_tests 150 python3 -m pytest -q -n 8 -p no:cacheprovider -rf --tb=short \
      tests/test_attention_mma.py -k onepass
    cases="8,12,1024,64,1;8,12,1024,64,0;16,12,512,64,0;4,16,4096,64,1"
    run onepass_fp32 90 python3 benchmarks/attention_layouts.py --fwd "" --onepass "atomic;1;0" --cases "$cases" \
      --out "$out/onepass_fp32.md"
    run onepass_bf16 90 python3 benchmarks/attention_layouts.py --fwd "" --onepass "atomic;1;0" --dtype bfloat16 \
      --cases "$cases" --out "$out/onepass_bf16.md"
    PYTORCH_OCL_ATTN_BWD_ONEPASS=atomic run prof_gpt2 110 python3 benchmarks/profile_model.py --net gpt2 --ref cuda \
      --top 8
    PYTORCH_OCL_ATTN_BWD_ONEPASS=atomic run prof_bert 100 python3 benchmarks/profile_model.py --net bert --ref cuda \
      --top 8
    ;;
  rnn35)  # the LSTM and GRU language models' training steps on the fused steps (default K-slices) vs CUDA, each twice
    # (CUDA's own LSTM step moved between 13 and 16.5 ms across leases)
    for i in 1 2; do
      run lstm_steps$i 70 python3 benchmarks/lstm_steps.py --ref cuda --fused-only
      run gru_steps$i 70 python3 benchmarks/lstm_steps.py --cell gru --ref cuda --fused-only
    done
    ;;
  sweep36)  # the engine's backward pass layouts (PYTORCH_OCL_ATTN_MMA_BWD: warps, tile, the head-dim split over warp
    # pairs forced at head dim 64, register caps) at BERT's / GPT-2's shapes with dropout and at D 128; ptxas's
    # registers and spills of each program (-cl-nv-verbose through the build trace)
    v="default;dkdv=4,16,split;dkdv=8,16,split;dkdv=4,32,split;dkdv=4,16,r168;dq=4,16,split;dq=8,16,split;dq=4,32,split"
    v="$v;dq=4,16;dq=4,32,r168;dkdv=4,16,split+dq=4,16,split"
    PYTORCH_OCL_BUILD_PROCESSES=0 PYTORCH_OCL_TRACE_BUILDS=1 PYTORCH_OCL_EXTRA_BUILD_OPTIONS=-cl-nv-verbose \
      run regs 120 python3 benchmarks/attention_layouts.py --fwd "" --mma-bwd "$v" --iters 1 \
      --cases "1,2,256,64,0;1,2,256,128,1" --out "$out/regs.md"
    grep -E "Compiling entry function 'attn_bwd|Used [0-9]+ registers|spill stores|^\| " "$out/regs.log" | head -150
    run sweep_d64 200 python3 benchmarks/attention_layouts.py --fwd "" --mma-bwd "$v" --dropout 0.1 \
      --cases "16,12,512,64,0;8,12,1024,64,1" --out "$out/sweep_d64.md"
    run sweep_d128 120 python3 benchmarks/attention_layouts.py --fwd "" --cases "8,12,2048,128,1" \
      --mma-bwd "default;dkdv=4,16,split;dkdv=8,32,split;dq=4,16,split;dq=8,32,split;dq=8,16;dkdv=4,16,r168" \
      --out "$out/sweep_d128.md"
    ;;
  check36)  # this session's changes natively: mma attention tests (backward layouts, 4-warp float32 heads over 64),
    # the RNN step kernels on their shared K-split text (tests, LSTM / GRU LM steps vs CUDA), SDPA vs CUDA
    PYTORCH_OCL_MMA_TEST=native run native_attn 150 python3 -m pytest -q -n 8 -p no:cacheprovider -rf --tb=short \
      tests/test_attention_mma.py
    run native_rnn 150 python3 -m pytest -q -n 4 -p no:cacheprovider -rf --tb=short tests/test_gru_fused.py \
      tests/test_lstm_fused.py tests/test_rnn.py
    run lstm_steps 70 python3 benchmarks/lstm_steps.py --ref cuda --fused-only
    run gru_steps 70 python3 benchmarks/lstm_steps.py --cell gru --ref cuda --fused-only
    run sdpa 200 python3 benchmarks/transformer.py --ref cuda --out "$out/sdpa.md"
    ;;
  check37)  # the wgmma GEMM's changes since its last native run (defines, packing's 16-byte reads, MLP test) and the
    # 16-bit op tests natively; bf16 / fp16 vs cuBLAS; the models under bf16 autocast (GPT-2, BERT, peak memory), resnet50
    export PYTORCH_OCL_MMA_TEST=native
    run native_16bit 220 python3 -m pytest -q -n 8 -p no:cacheprovider -rf --tb=short tests/test_gemm_wgmma.py \
      tests/test_gemm_mma.py tests/test_autocast.py tests/test_group_norm.py tests/test_half_opinfo.py
    for m in bfloat16 float16; do
      run "gemm_$m" 60 python3 benchmarks/gemm.py --ref cuda --dtype $m --only "square 1024,square 4096,bert" \
        --out "$out/gemm_$m.md"
    done
    run transformer_bf16 300 python3 benchmarks/transformer.py --ref cuda --models --amp bf16 --out "$out/transformer_bf16.md"
    run resnet50_bf16 120 python3 benchmarks/models.py --math bf16 --nets resnet50 --out "$out/resnet50_bf16.md"
    ;;
  wgmma37)  # float32 on wgmma (3xTF32 by default, TF32 at 'high'): native GEMM / conv / RNN tests and whole networks
    # against the CPU, fp32 / TF32 GEMMs vs cuBLAS (mma.sync in the same run), the fp32 models vs CUDA, BERT bf16 by kernel
    export PYTORCH_OCL_MMA_TEST=native
    run native_fp32 300 python3 -m pytest -q -n 10 -p no:cacheprovider -rf --tb=short tests/test_gemm_wgmma.py \
      tests/test_gemm.py tests/test_conv.py tests/test_rnn.py tests/test_lstm_fused.py tests/test_validate_network.py \
      tests/test_random_tuning.py tests/test_mnist_smoke.py
    for m in exact tf32; do
      run "gemm_$m" 70 python3 benchmarks/gemm.py --ref cuda --math $m --only "square 1024,square 4096,bert" \
        --out "$out/gemm_$m.md"
    done
    PYTORCH_OCL_WGMMA=0 run gemm_exact_mma 50 python3 benchmarks/gemm.py --ref cuda --only "square 4096,bert mlp" \
      --out "$out/gemm_exact_mma.md"
    run transformer_fp32 240 python3 benchmarks/transformer.py --ref cuda --models --out "$out/transformer_fp32.md"
    run bert_bf16 100 python3 benchmarks/profile_model.py --net bert --amp bf16 --ref cuda --top 15
    ;;
  native37)  # the float32 wgmma default natively: GEMM / tuning / whole-network / example tests, the custom conv example
    # timed alone (it timed out under a loaded suite), fp32 (3xTF32) and TF32 GEMMs vs cuBLAS on every gemm.py shape
    export PYTORCH_OCL_MMA_TEST=native
    run native 230 python3 -m pytest -q -n 12 -p no:cacheprovider -rf --tb=short tests/test_gemm_wgmma.py \
      tests/test_gemm.py tests/test_build_workers.py tests/test_validate_network.py tests/test_random_tuning.py \
      tests/test_mnist_smoke.py tests/test_tune_deferred.py tests/test_speculative_builds.py \
      tests/test_parallel_builds.py tests/test_examples.py
    run custom_conv 150 bash -c "time python3 examples/custom_conv2d.py --quick --device ocl:0"
    run gemm_exact 80 python3 benchmarks/gemm.py --ref cuda --math exact --out "$out/gemm_exact.md"
    run gemm_tf32 80 python3 benchmarks/gemm.py --ref cuda --math tf32 --out "$out/gemm_tf32.md"
    ;;
  final37)  # wgmma's size rule natively (tests, the shapes it sends back to the tiled kernels), the build-thread tests,
    # 3 CNNs vs CUDA TF32 off and with torch's defaults (TF32 convolutions), torch.linalg vs cuSOLVER; 8 files come back
    PYTORCH_OCL_MMA_TEST=native run native 80 python3 -m pytest -q -n 6 -p no:cacheprovider -rf --tb=short \
      tests/test_gemm_wgmma.py tests/test_build_workers.py tests/test_parallel_builds.py tests/test_exit.py
    run gemm_rule 45 python3 benchmarks/gemm.py --ref cuda --only "square 1024,square 2048,square 4096,attn" \
      --out "$out/gemm_rule.md"
    run models 150 python3 benchmarks/models.py --nets resnet50,mobilenet_v2,vgg16 --out "$out/models.md"
    run models_default 150 python3 benchmarks/models.py --math default --nets resnet50,mobilenet_v2,vgg16 \
      --out "$out/models_default.md"
    run linalg 75 python3 benchmarks/linalg.py --ref cuda --seconds 20 --out "$out/linalg.md"
    rm -f "$out"/*.png "$out"/gemm_rule.log "$out"/models*.log "$out"/build.log
    ;;
  check40)  # fresh machine: the engine decided before tile tuning (wgmma beating the fallback tile config by 1.25x is
    # taken untuned): native engine tests, GPT-2 small's cold first step, GPT-2 / BERT float32 steps vs CUDA
    PYTORCH_OCL_MMA_TEST=native run native 70 python3 -m pytest -q -n 8 -p no:cacheprovider -rf --tb=short \
      tests/test_gemm_engine_tuning.py tests/test_gemm.py::test_split_waves_setting \
      tests/test_conv.py::test_gpu_mapping_conv_paths
    rm -rf /tmp/nvcache_first
    CUDA_CACHE_PATH=/tmp/nvcache_first run cold_first 100 python3 benchmarks/cold_start.py --nets gpt2small
    run transformer_fp32 240 python3 benchmarks/transformer.py --ref cuda --models --out "$out/transformer_fp32.md"
    rm -f "$out"/*.png "$out"/build.log "$out"/transformer_fp32.log
    ;;
  build41)  # fresh machine: GPT-2 small's cold first step traced (build seconds by kernel, on the path and in the
    # background), then what NVIDIA's compiler takes per program and per kernel of a GPT-2 step (build_cost.py: would
    # building only the used variant of a multi-kernel program shorten the cold step's critical path?)
    rm -rf /tmp/nvcache_41
    CUDA_CACHE_PATH=/tmp/nvcache_41 PYTORCH_OCL_TRACE_BUILDS=1 run cold_traced 120 python3 benchmarks/cold_start.py \
      --nets gpt2small
    run build_cost 200 python3 benchmarks/build_cost.py --net gpt2 --limit 45 --out "$out/build_cost.md"
    ;;
  cold42)  # fresh machine first: GPT-2 small's cold first step with the default deferrals (engine classes on wgmma
    # while their fallback tile config builds, large matrix-engine tile tunings) and with everything decided on the
    # spot (PYTORCH_OCL_TUNE_DEFERRED=0), each with its own empty NVIDIA cache; then the deferral tests natively
    for w in deferred spot; do
      rm -rf /tmp/nvcache_$w
      CUDA_CACHE_PATH=/tmp/nvcache_$w PYTORCH_OCL_TUNE_DEFERRED=$([ $w = spot ] && echo 0) \
        run cold_$w 150 python3 benchmarks/cold_start.py --nets gpt2small
    done
    PYTORCH_OCL_MMA_TEST=native run engine_tests 200 python3 -m pytest -v -n 6 -p no:cacheprovider -rf \
      tests/test_gemm_engine_tuning.py tests/test_tune_deferred.py tests/test_gemm.py::test_split_waves_setting
    ;;
  cold40)  # fresh machine first: GPT-2 small's cold first step with the timed wgmma / tiled choice, then with the
    # size rule alone (PYTORCH_OCL_WGMMA=rule), each with its own empty NVIDIA cache; then resnet50's TF32 layers
    for w in timed rule; do
      rm -rf /tmp/nvcache_$w
      CUDA_CACHE_PATH=/tmp/nvcache_$w PYTORCH_OCL_WGMMA=$([ $w = rule ] && echo rule) \
        run cold_$w 150 python3 benchmarks/cold_start.py --nets gpt2small
    done
    run conv_kernels 150 python3 benchmarks/conv.py --ref cuda --math default --nets resnet50 --batches 32 --kernels \
      --out "$out/conv_kernels.md"
    rm -f "$out"/*.png "$out"/build.log
    ;;
  attn128_fwd)  # issue 15's D128 float32 attention (0.75 / 0.68 of CUDA): forward layouts on the engine (warps, keys a
    # tile; 3xTF32's split Q fills 255 registers at 4 warps x 16 keys, ptx_registers.py), fwd and fwd+bwd, errors
    run attn128_fwd 200 python3 benchmarks/attention_layouts.py --fwd "" --mma "default;8,16,0;4,32,0;8,32,0;2,16,0" \
      --cases "8,12,2048,128,1;8,12,1024,128,0" --out "$out/attn128_fwd.md"
    ;;
  splits40)  # split-K aimed at 4 and 8 groups per compute unit (PYTORCH_OCL_SPLIT_WAVES; default 2): resnet50's TF32
    # layers by kernel (their weight gradients are few-tile products over long K), decisions re-timed (force)
    for w in 4 8; do
      PYTORCH_OCL_SPLIT_WAVES=$w PYTORCH_OCL_AUTOTUNE=force run conv_waves$w 200 python3 benchmarks/conv.py --ref cuda \
        --math default --nets resnet50 --batches 32 --kernels --out "$out/conv_waves$w.md"
    done
    rm -f "$out"/*.png "$out"/build.log
    ;;
  profile)  # at most 8 files come back from a call: one log per network
    for net in ${2:-convnext_small alexnet mobilenet_v2 efficientnet_b0}; do
      run "profile_$net" 100 python3 benchmarks/profile_model.py --net "$net" --ref cuda --top 30
    done
    ;;
  *)
    echo "unknown part '$1' (validate, models, kernels, profile)" >&2
    exit 2
    ;;
esac
