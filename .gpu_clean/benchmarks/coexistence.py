"""Does CUDA still work in a process that also uses ocl?

Runs the same small CUDA training step (forward, backward, SGD) twice: in a child process
where pytorch_ocl is not loaded (TORCH_DEVICE_BACKEND_AUTOLOAD=0), and here, after ocl work.
Prints, per phase, whether it ran and whether the results are identical.

Known limit (torch 2.8 and later): once any PrivateUse1 backend is registered under a name,
at::getAccelerator() returns PrivateUse1, autograd nodes on CUDA tensors get no stream, and
every CUDA backward trips "opt_ready_stream && opt_parent_stream INTERNAL ASSERT FAILED"
(pytorch/pytorch#161129). CUDA forward passes, copies and optimizer math are unaffected.
"""
import os
import subprocess
import sys

import torch

STEP = r"""
import torch
def step(backward):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(32, 64, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    if backward:
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return float(loss), [p.detach().cpu() for p in model.parameters()]
"""


def reference():
    code = STEP + "\nimport pickle, sys\nsys.stdout.buffer.write(pickle.dumps((step(False)[0], step(True))))\n"
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True).stdout
    import pickle

    return pickle.loads(out)


def main():
    if not torch.cuda.is_available():
        print("coexistence: no CUDA device; nothing to check")
        return 0
    ref_forward_loss, (ref_loss, ref_params) = reference()
    import pytorch_ocl  # noqa: F401  (already loaded when autoloaded)

    a = torch.randn(1000, device="ocl")
    ocl_value = (a * 2 + 1).sum().item()
    namespace = {}
    exec(STEP, namespace)
    fwd_loss, _ = namespace["step"](False)
    print(f"cuda forward with ocl loaded: loss {fwd_loss:.6f} (reference {ref_forward_loss:.6f}) "
          f"identical={fwd_loss == ref_forward_loss}; ocl sum {ocl_value:.3f}")
    try:
        loss, params = namespace["step"](True)
    except RuntimeError as e:
        print(f"cuda training step with ocl loaded: FAILED: {str(e).splitlines()[0]}")
        print("  torch >= 2.8 makes a registered PrivateUse1 backend the accelerator and CUDA autograd then "
              "asserts (pytorch/pytorch#161129); run CUDA training in a process with TORCH_DEVICE_BACKEND_AUTOLOAD=0")
        return 1
    same = loss == ref_loss and all(torch.equal(p, q) for p, q in zip(params, ref_params))
    print(f"cuda training step with ocl loaded: loss {loss:.6f} (reference {ref_loss:.6f}) identical={same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
