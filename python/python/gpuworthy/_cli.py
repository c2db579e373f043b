"""The ``gpuworthy`` command installed with the Python package: the same command-line tool as the Rust workspace's
(``gpuworthy run``, ``sweep``, ``explain``, ``calibrate`` ...), run inside the package's compiled module, so that a
wheel gives Python users the whole tool without a Rust toolchain."""

from __future__ import annotations

import signal
import sys

from . import _gpuworthy


def main() -> None:
    """Runs the command line with this process's arguments and exits with its status."""
    # The tool runs in Rust without returning to Python until it ends, so Python's own Ctrl-C handler would only set
    # a flag nobody reads: restore the default, and Ctrl-C stops the command as it stops the native binary.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    sys.exit(_gpuworthy.main(["gpuworthy", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
