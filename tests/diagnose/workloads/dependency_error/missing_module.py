"""Imports a package that is not installed in the job's image."""

import os

print("python", os.sys.version.split()[0])
import torchvision_transforms_v3  # noqa: E402,F401
