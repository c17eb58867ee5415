"""``python3 -m syncbn.run script.py args...``: runs a training script with syncbn patched in.

Calls ``syncbn.torch.patch()`` (torch.nn.SyncBatchNorm computes CPU tensors with
libsyncbn) and then runs the script as ``python3 script.py args...`` would, with
``sys.argv`` set to the script and its arguments; ``-m module args...`` runs a
module instead. Works under ``torchrun``: ``torchrun --nproc_per_node 2 -m
syncbn.run train.py --sync-bn``.
"""
import runpy
import sys


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m syncbn.run script.py [args...]\n"
              "       python3 -m syncbn.run -m module [args...]", file=sys.stderr)
        return 2
    from syncbn.torch import patch
    patch()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("syncbn.run: -m needs a module name", file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
