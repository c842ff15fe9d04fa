"""tracereplay: sealed traces of agent runs, judged offline against scenario oracles and
approved baselines.

The distribution installs the ``tracereplay`` command (the Rust binary) and a pytest plugin
(:mod:`tracereplay.pytest_plugin`). :func:`binary` finds the installed command.
"""

import os
import shutil
import sys
import sysconfig
from importlib import metadata

__all__ = ["binary", "__version__"]

try:
    __version__ = metadata.version("tracereplay")
except metadata.PackageNotFoundError:  # a source checkout, not installed
    __version__ = "0"


def binary() -> str:
    """The path of the ``tracereplay`` command this distribution installed.

    ``TRACEREPLAY_BINARY`` overrides it (a build of your own); else the scripts directory of
    the running interpreter's environment, else ``PATH``.
    """
    override = os.environ.get("TRACEREPLAY_BINARY")
    if override:
        return override
    name = "tracereplay.exe" if sys.platform == "win32" else "tracereplay"
    for scheme in (None, "posix_user", "nt_user"):
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        candidate = os.path.join(scripts, name)
        if os.path.isfile(candidate):
            return candidate
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(
        "the tracereplay command is not installed beside this package: reinstall it with "
        "`pip install tracereplay`, or set TRACEREPLAY_BINARY to a build of your own"
    )
