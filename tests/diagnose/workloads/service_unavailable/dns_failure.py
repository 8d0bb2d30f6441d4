"""The model registry's host name does not resolve."""

import urllib.request

print("downloading base model")
urllib.request.urlopen("http://model-registry.invalid/models/resnet50/latest", timeout=2)
