"""The diagnosis of a PyTorch user's model code, from real scripts run under ``flightlog run``
(issue 29): torch's checks of a tensor's strides, of a convolution's input against its weight,
of a loss's target dtype, and its compilers' refusals of the user's Python are the model's code
to change — not a setting, not the data, not torch's version."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli

pytestmark = pytest.mark.embedded_only("the report is the same over either transport (tests/diagnose/test_api.py)")


def _run(home: Path, script: str) -> dict[str, Any]:
    """Run ``script`` under ``flightlog run``; the run's full diagnosis."""
    from flightlog.client import Client

    path = home.parent / "workload.py"
    path.write_text(textwrap.dedent(script))
    proc = cli(home, "run", "--project", "issue29", "--", sys.executable, str(path), check=False, timeout=120)
    m = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)
    assert m, proc.stderr
    with Client(home) as c:
        return c.diagnose(m[1], auto_baseline=False)


def _lead(report: dict[str, Any], category: str) -> None:
    """The top finding is ``category`` at 0.5 or more (a lead), with evidence."""
    top = report["findings"][0] if report["findings"] else {}
    assert top.get("category") == category and top["confidence"] >= 0.5, report["findings"][:3]
    assert top["evidence"] and all(e["detail"] for e in top["evidence"]), top


VIEW_AFTER_TRANSPOSE = """
import torch
class Attention(torch.nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.h, self.qkv = heads, torch.nn.Linear(d, 3 * d)
    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in self.qkv(x).chunk(3, dim=-1))
        att = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        return (att @ v).transpose(1, 2).view(b, t, d)
print("step 0: warmup", flush=True)
Attention()(torch.randn(2, 10, 32))
"""


def test_a_view_of_a_tensor_whose_strides_do_not_allow_it(home: Path) -> None:
    """torch's "view size is not compatible with input tensor's size and stride … Use
    .reshape(...) instead": the model's code (read as bad_parameter 0.74 before)."""
    pytest.importorskip("torch")
    _lead(_run(home, VIEW_AFTER_TRANSPOSE), "code_error")


CONV_CHANNELS = """
import torch
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(), torch.nn.Flatten())
print("pretrained on RGB, fine-tuning on the scans", flush=True)
model(torch.rand(16, 1, 64, 64))
"""


def test_a_convolution_given_another_number_of_channels_than_its_weight(home: Path) -> None:
    """torch's "expected input[16, 1, 64, 64] to have 3 channels, but got 1 channels instead"
    (read as data_error 0.35 before)."""
    pytest.importorskip("torch")
    _lead(_run(home, CONV_CHANNELS), "code_error")


FLOAT_TARGET = """
import torch
model = torch.nn.Linear(16, 3)
print("epoch 1", flush=True)
logp = torch.log_softmax(model(torch.randn(4, 16)), dim=1)
torch.nn.NLLLoss()(logp, torch.tensor([0.0, 2.0, 1.0, 1.0]))
"""


def test_a_loss_given_class_ids_of_another_dtype(home: Path) -> None:
    """torch's "expected target dtype to be Long or Byte, but got Float" (read as data_error 0.65
    before)."""
    pytest.importorskip("torch")
    _lead(_run(home, FLOAT_TARGET), "code_error")


SCRIPT_KWARGS = """
import torch
class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 2)
    def forward(self, x, **options):
        return self.fc(x) * options.get("scale", 1.0)
print("exporting TorchScript for the C++ server", flush=True)
torch.jit.script(Head())
"""


def test_torchscript_refusing_the_user_s_python(home: Path) -> None:
    """torch.jit.frontend.NotSupportedError for ``**kwargs`` in ``forward`` (read as
    dependency_error 0.30 before)."""
    pytest.importorskip("torch")
    _lead(_run(home, SCRIPT_KWARGS), "code_error")


DYNAMO_FULLGRAPH = """
import torch
class Gated(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)
    def forward(self, x):
        out = self.fc(x)
        if out.sum().item() > 0:
            out = out * 2
        return out
model = torch.compile(Gated(), backend="eager", fullgraph=True)
print("compiling...", flush=True)
model(torch.randn(4, 16))
"""


def test_dynamo_refusing_a_data_dependent_branch_under_fullgraph(home: Path) -> None:
    """torch._dynamo.exc.UserError "Could not guard on data-dependent expression" (read as
    bad_parameter 0.43 before)."""
    pytest.importorskip("torch")
    _lead(_run(home, DYNAMO_FULLGRAPH), "code_error")
