"""Prints the source of generated ocl kernels named on stdin (one name a line, e.g. ocl_red_44f86b47d808) with
the comment block Inductor writes above each (graph nodes, ATen ops), found in an Inductor cache directory
(argv[1]; the FX graph cache stores the wrapper module inside pickles, so files are read as bytes)."""
import os
import re
import sys


def main():
    root = sys.argv[1]
    names = [n.strip() for n in sys.stdin if n.strip()]
    blobs = []
    for d, _, files in os.walk(root):
        for f in files:
            try:
                with open(os.path.join(d, f), "rb") as fh:
                    blobs.append((os.path.join(d, f), fh.read().decode("utf-8", "replace")))
            except OSError:
                pass
    for name in names:
        for path, text in blobs:
            m = re.search(rf"^{name} = _OclKernel\(.*?^''', \{{.*?\}}\)", text, re.S | re.M)
            if not m:
                continue
            head = text.rfind("# Topologically Sorted Source Nodes", 0, m.start())
            print(f"=== {name} ({path})")
            print(text[head if head >= 0 else m.start():m.end()])
            break
        else:
            print(f"=== {name}: not found under {root}")


if __name__ == "__main__":
    main()
