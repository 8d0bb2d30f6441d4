"""``python -m flightlog.pipeline.stepmain module:function`` — run one function step.

The pipeline controller starts this under ``flightlog run``, so the function's output,
resources, status and failure land on the step's run like any command's. Its parameters come
as JSON in ``FLIGHTLOG_STEP_PARAMS``. ``path/to/file.py:function`` imports a script by path
(not as ``__main__``, so the script's own ``if __name__ == "__main__":`` block stays quiet).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["load_function", "main"]


def load_function(reference: str) -> Any:
    target, _, name = reference.rpartition(":")
    if target.endswith(".py"):
        path = Path(target)
        module_name = f"_flightlog_step_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    func = getattr(module, name)
    return getattr(func, "__wrapped__", func)  # a @flightlog.step runs its function


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m flightlog.pipeline.stepmain module:function\n")
        return 2
    sys.path.insert(0, os.getcwd())
    func = load_function(args[0])
    params = json.loads(os.environ.get("FLIGHTLOG_STEP_PARAMS") or "{}")
    result = func(**params)
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


if __name__ == "__main__":
    sys.exit(main())
