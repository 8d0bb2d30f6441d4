# expect: metric_regressed
# baseline: base_classifier.py
# argv: 0.45
"""The same training with 45 % of the training labels flipped upstream: it runs, exits 0, and
ends with a much worse validation accuracy and loss than the last good run."""

import runpy
import sys
from pathlib import Path

sys.argv = [str(Path(__file__).with_name("base_classifier.py")), *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
