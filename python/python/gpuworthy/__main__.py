"""``python -m gpuworthy``: the command line, as the ``gpuworthy`` command runs it (for an environment whose scripts
folder is not on the PATH)."""

from ._cli import main

main()
