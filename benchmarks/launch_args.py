"""Host cost of one kernel launch by its number of arguments (an empty kernel on a fresh queue): buffer
arguments and ulong arguments, set before every launch or once. Says what a launch with many arguments (the
multi-tensor kernels of foreach ops and fused optimizers: a buffer and an offset per tensor operand) costs the
host, and whether clSetKernelArg's cost grows with the kernel's argument count.

    python3 benchmarks/launch_args.py [--device 0] [--launches 2000]
"""
import argparse

import common


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--launches", type=int, default=2000)
    args = p.parse_args()
    common.import_backend()
    from pytorch_ocl import _C

    rows = []
    for n in (1, 8, 32, 64, 128, 256):
        cells = [n]
        for buffers, scalars in ((n, 0), (0, n)):
            for each in (True, False):
                cells.append(_C.measure_launch_us(args.device, args.launches, False, buffers, 0, each, scalars))
        rows.append(cells)
        print(f"{n} args: buffers set each launch {cells[1]:.2f} us, set once {cells[2]:.2f}; "
              f"ulongs each launch {cells[3]:.2f}, once {cells[4]:.2f}", flush=True)
    header = ["arguments", "buffers, set each launch (us)", "buffers, set once", "ulongs, set each launch",
              "ulongs, set once"]
    print(common.markdown_table(header, rows))


if __name__ == "__main__":
    main()
