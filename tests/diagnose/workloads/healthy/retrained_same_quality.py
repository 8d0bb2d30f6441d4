# expect: none
# baseline: ../metric_regressed/base_classifier.py
# argv: 0.03
"""Retrained with a little label noise: the final metrics move by a few percent, not a regression."""

import runpy
import sys
from pathlib import Path

sys.argv = [str(Path(__file__).parent.parent / "metric_regressed" / "base_classifier.py"), *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
