"""Where a GPT-2 / BERT training step's wall time goes on the host: the time until the forward, the
backward and the optimizer step return (host work: launches, Dynamo guards, Python wrappers), then
the wait for the device. A step whose host phases sum close to its wall time is host-bound; one that
mostly waits is device-bound (see profile_model.py for its kernels).

    python3 benchmarks/step_phases.py --net bert|gpt2 [--compile] [--quick] [--device ocl:0|cuda]

Prints the median step (of --iters, after warm-up) and the slowest, since a compiled step's wall
time can vary (garbage collection, recompiles: run with TORCH_LOGS=recompiles to see those).
"""
import argparse
import time

import torch

import common


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--net", choices=["gpt2", "bert"], default="bert")
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--quick", action="store_true", help="transformer.py's tiny sizes")
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()
    if args.device.startswith("ocl"):
        common.import_backend()
    import transformer_models as tm

    s = tm.sizes(args.quick)[args.net]
    made = (tm.gpt2_train if args.net == "gpt2" else tm.bert_train)(args.device, s, False)
    model, opt = made[0], made[1]
    fwd = torch.compile(model) if args.compile else model
    ids = tm._tokens(s["vocab"], (s["batch"], s["seq"]), 1).to(args.device)
    kw = dict(input_ids=ids, labels=ids)
    if args.net == "bert":
        kw["attention_mask"] = torch.ones_like(ids)

    def step():
        t = [time.perf_counter()]
        opt.zero_grad(set_to_none=True)
        loss = fwd(**kw).loss
        t.append(time.perf_counter())
        loss.backward()
        t.append(time.perf_counter())
        opt.step()
        t.append(time.perf_counter())
        common.synchronize(args.device)
        t.append(time.perf_counter())
        return [1e3 * (b - a) for a, b in zip(t, t[1:])] + [1e3 * (t[-1] - t[0])]

    for _ in range(3):
        step()
    rows = sorted((step() for _ in range(args.iters)), key=lambda r: r[-1])
    print(f"{args.net}{' compiled' if args.compile else ''} on {args.device} (ms): "
          "forward host | backward host | optimizer host | device wait | wall")
    for label, r in (("median", rows[len(rows) // 2]), ("slowest", rows[-1])):
        print(f"  {label:8s}" + "".join(f"{x:10.2f}" for x in r))


if __name__ == "__main__":
    main()
