"""``python -m tracereplay ARGS``: runs the installed ``tracereplay`` command with ARGS."""

import os
import subprocess
import sys

from . import binary


def main() -> int:
    command = [binary(), *sys.argv[1:]]
    if os.name == "posix":
        os.execv(command[0], command)
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
