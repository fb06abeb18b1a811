"""Debian's Mininet (`apt-get install mininet`, which `make install` does), importable from the venv.

The venv does not see Debian's dist-packages, and the PyPI `mininet` is a 2020 snapshot whose
Python needs an `mnexec` it does not ship. So the one package `mininet` is loaded from Debian's
directory by path, without putting the rest of dist-packages on sys.path.

    from emulator.network.mininet_import import load_mininet
    load_mininet()            # then `import mininet.net` works anywhere in this process
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from emulator.network.errors import NetworkError

DEBIAN_MININET = Path("/usr/lib/python3/dist-packages/mininet")


def load_mininet(package_dir: Path = DEBIAN_MININET) -> None:
    """Make `import mininet` mean Debian's package. NetworkError when it or `mnexec` is missing."""
    loaded = sys.modules.get("mininet")
    if loaded is not None and Path(loaded.__file__ or "").parent == package_dir:
        return
    if not (package_dir / "__init__.py").is_file() or shutil.which("mnexec") is None:
        raise NetworkError(f"Mininet is not installed ({package_dir} or mnexec missing): "
                           "apt-get install mininet (`make install` does)")
    if loaded is not None:
        raise NetworkError(f"another mininet package is already imported ({loaded.__file__}); "
                           "the twin needs Debian's, which brings mnexec")
    spec = importlib.util.spec_from_file_location("mininet", package_dir / "__init__.py",
                                                  submodule_search_locations=[str(package_dir)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mininet"] = module
    spec.loader.exec_module(module)
