"""JAX's and Flax's families of the program's own faults, each as a real run under ``flightlog
run`` diagnosed in full (issue 29).

JAX is not in flightlog's environment, so each run imports a small ``jax`` (and ``flax``) package
written next to the script: the same exception classes, in the same modules (``jax.errors``,
``flax.errors``), raised from the same files as the libraries' raise sites (``jax/_src/tree_util.py``,
``jax/_src/random/prng.py``, ``jax/_src/api.py``) with their messages, and the note JAX's
traceback filter adds under its exception (``--------------------`` then "For simplicity, JAX has
removed its internal frames …"). Each was read below a lead, or as the data's, on complete runs
of the real libraries (jax 0.10, flax 0.12, optax 0.2, orbax-checkpoint 0.12) before the rules
named the family."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli

pytestmark = pytest.mark.embedded_only("the report is the same over either transport (tests/diagnose/test_api.py)")

#: the modules of the stand-in packages, by path under the script's folder
_PACKAGE = {
    "jax/__init__.py": "from jax import errors\nfrom jax._src.api import grad\n",
    "jax/errors.py": '''
        class JAXTypeError(TypeError):
            """JAX's base of its documented errors (``jax._src.errors``)."""
        class ConcretizationTypeError(JAXTypeError):
            pass
        class TracerBoolConversionError(ConcretizationTypeError):
            pass
        class UnexpectedTracerError(JAXTypeError):
            pass
        for _cls in (ConcretizationTypeError, TracerBoolConversionError, UnexpectedTracerError):
            _cls.__module__ = "jax.errors"
        FILTERED = ("--------------------\\nFor simplicity, JAX has removed its internal frames from the "
                    "traceback of the following exception. Set JAX_TRACEBACK_FILTERING=off to include these.")
        ''',
    "jax/_src/__init__.py": "",
    "jax/_src/tree_util.py": """
        def tree_map(f, tree, *rest):
            for other in rest:
                if len(other) != len(tree):
                    raise ValueError(
                        "pytree structure error: different numbers of pytree children at key path\\n"
                        "    tree_map tree\\n"
                        f"At that key path, the prefix pytree tree_map tree has a subtree of type\\n    {type(tree)}\\n"
                        f"with {len(tree)} child keys\\n    {' '.join(tree)}\\n"
                        f"but at the same key path the full pytree has a subtree of the same type but with "
                        f"{len(other)} child keys\\n    {' '.join(other)}")
            return {k: f(tree[k], *(o[k] for o in rest)) for k in tree}
        """,
    "jax/_src/numpy/__init__.py": "",
    "jax/_src/numpy/array_methods.py": '''
        import jax.errors
        class DynamicJaxprTracer:
            """A value traced under ``jit`` that a side effect kept past the trace."""
            def __add__(self, other):
                e = jax.errors.UnexpectedTracerError(
                    "Encountered an unexpected tracer. A function transformed by JAX had a side effect, allowing "
                    "for a reference to an intermediate value with type float32[2,4] wrapped in a "
                    "DynamicJaxprTracer to escape the scope of the transformation.\\nJAX transformations require "
                    "that functions explicitly return their outputs, and disallow saving intermediate values to "
                    "global state.\\nThe function being traced when the value leaked was forward at train.py:9 "
                    "traced for jit.\\n------------------------------\\nThe leaked intermediate value was "
                    "created on line train.py:11:8 (forward).\\n------------------------------\\n\\nTo catch "
                    "the leak earlier, try setting the environment variable JAX_CHECK_TRACER_LEAKS or using the "
                    "`jax.checking_leaks` context manager.\\n"
                    "See https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError")
                e.add_note(jax.errors.FILTERED)
                raise e
        ''',
    "jax/_src/random/__init__.py": "",
    "jax/_src/random/prng.py": """
        def random_wrap(key):
            if not hasattr(key, "shape"):
                raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have ndim, "
                                f"shape, and dtype attributes. Got {key!r}")
            return key
        """,
    "jax/_src/api.py": """
        def grad(fun):
            def grad_f(x):
                if isinstance(x, int) or (isinstance(x, list) and all(isinstance(v, int) for v in x)):
                    raise TypeError("grad requires real- or complex-valued inputs (input dtype that is a "
                                    "sub-dtype of np.inexact), but got int32. If you want to use Boolean- or "
                                    "integer-valued inputs, use vjp or set allow_int to True.")
                return fun(x)
            return grad_f
        """,
    "flax/__init__.py": "from flax import errors\n",
    "flax/errors.py": """
        class FlaxError(Exception):
            def __init__(self, message):
                super().__init__(f"{message} (https://flax.readthedocs.io/en/latest/api_reference/"
                                 f"flax.errors.html#flax.errors.{type(self).__name__})")
        class InvalidRngError(FlaxError):
            pass
        class CallCompactUnboundModuleError(FlaxError):
            def __init__(self):
                super().__init__("Can't call compact methods on unbound modules")
        for _cls in (FlaxError, InvalidRngError, CallCompactUnboundModuleError):
            _cls.__module__ = "flax.errors"
        """,
}

_TRAIN = "print('starting training: 64 examples, 8 features', flush=True)\n"

#: a Python ``if`` on a traced loss inside ``jit``: JAX's filter leaves the user's frame last
TRACER_BOOL = (
    _TRAIN
    + """
import jax
def train_step(loss):
    if loss > 1.0:  # only clip when the loss is large
        pass
    return loss
class Traced:
    def __gt__(self, other):
        e = jax.errors.TracerBoolConversionError(
            "Attempted boolean conversion of traced array with shape bool[].\\nThe error occurred while tracing "
            "the function train_step at train.py:8 for jit. This concrete value was not available in Python "
            "because it depends on the values of the arguments w, x, and y.\\n"
            "See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError")
        e.add_note(jax.errors.FILTERED)
        raise e
train_step(Traced())
"""
)
#: a tracer kept past its transformation, used after it
LEAKED_TRACER = (
    _TRAIN
    + """
from jax._src.numpy.array_methods import DynamicJaxprTracer
class Logger:
    last_hidden = DynamicJaxprTracer()
print("step 2 out 3.0464", flush=True)
print("hidden norm", Logger.last_hidden + 1.0)
"""
)
#: an optimizer state initialised for the backbone, updated with the whole params (optax over tree_map)
TREE_MISMATCH = (
    _TRAIN
    + """
from jax._src.tree_util import tree_map
params = {"backbone": 1.0, "head": 2.0}
opt_state = {"w": 0.0}
print("step 0 loss 32.000", flush=True)
tree_map(lambda p, s: p + s, params, opt_state)
"""
)
#: the config's integer seed handed where a PRNG key goes
INT_KEY = (
    _TRAIN
    + """
from jax._src.random.prng import random_wrap
SEED = 1234
print("step 0: augmenting batch", flush=True)
random_wrap(SEED)
"""
)
#: the gradient taken with respect to integer token ids
GRAD_OF_INTS = (
    _TRAIN
    + """
import jax
print("loss 3.2", flush=True)
jax.grad(lambda t: sum(t))([1, 5, 7])
"""
)
#: a Flax model with dropout applied in training without its rng
MISSING_RNG = (
    _TRAIN
    + """
import flax
print("init done; training", flush=True)
raise flax.errors.InvalidRngError('Dropout_0 needs PRNG for "dropout"')
"""
)
#: a Flax module called outside ``apply``
UNBOUND_MODULE = (
    _TRAIN
    + """
import flax
print("encoder initialised; encoding", flush=True)
raise flax.errors.CallCompactUnboundModuleError()
"""
)


def _run(home: Path, script: str) -> dict[str, Any]:
    """Run ``script`` (beside the stand-in packages) under ``flightlog run``; its full diagnosis."""
    from flightlog.client import Client

    for name, text in _PACKAGE.items():
        path = home.parent / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    workload = home.parent / "train.py"
    workload.write_text(script)
    proc = cli(home, "run", "--project", "jax", "--", sys.executable, str(workload), check=False, timeout=120)
    m = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)
    assert m, proc.stderr
    assert "Traceback (most recent call last)" in proc.stderr, proc.stderr
    with Client(home) as c:
        return c.diagnose(m[1], auto_baseline=False)


@pytest.mark.parametrize(
    ("script", "words"),
    [
        # code_error 0.39 on a complete run of jax: below a lead
        (TRACER_BOOL, "TracerBoolConversionError"),
        # code_error 0.34
        (LEAKED_TRACER, "UnexpectedTracerError"),
        # optax's update of a state for another tree: data_error 0.14; orbax's restore into
        # another structure ("tree structures do not match"): code_error 0.24
        (TREE_MISMATCH, "pytree structure error"),
        # data_error 0.48
        (INT_KEY, "invalid PRNG key data"),
        # data_error 0.54
        (GRAD_OF_INTS, "requires real- or complex-valued inputs"),
        # flax's InvalidRngError: code_error 0.43
        (MISSING_RNG, "InvalidRngError"),
        # flax's CallCompactUnboundModuleError: code_error 0.35
        (UNBOUND_MODULE, "CallCompactUnboundModuleError"),
    ],
    ids=["tracer-bool", "leaked-tracer", "tree-mismatch", "int-prng-key", "grad-of-ints", "missing-rng", "unbound"],
)
def test_jax_s_and_flax_s_rules_broken_by_the_program_are_a_code_error(home: Path, script: str, words: str) -> None:
    """A traced value used as a concrete one, two trees of arrays that do not fit, an integer for a
    PRNG key or for a gradient's input, a Flax module used against its API: JAX and Flax raise
    each from several places whatever the data, and each is the training code's fault."""
    report = _run(home, script)
    top = report["findings"][0] if report["findings"] else {}
    assert top.get("category") == "code_error" and top["confidence"] >= 0.5, report["findings"][:3]
    assert any(words in e["detail"] for e in top["evidence"]), top["evidence"]


def test_numpy_1_s_copy_false_under_numpy_2_is_a_dependency_error(home: Path) -> None:
    """``np.array(batches, dtype=np.float32, copy=False)`` in preprocessing written for NumPy 1
    (copy when needed) raises under NumPy 2 (never copy): the upgrade broke the code, as a removed
    alias does. Real NumPy 2; read as code_error 0.44 before."""
    report = _run_numpy(
        home,
        "import numpy as np\n"
        "batches = [np.arange(4, dtype=np.int64), np.arange(4, dtype=np.int64)]\n"
        "print('stacking', len(batches), 'batches', flush=True)\n"
        "arr = np.array(batches, dtype=np.float32, copy=False)\n",
    )
    top = report["findings"][0] if report["findings"] else {}
    assert top.get("category") == "dependency_error" and top["confidence"] >= 0.5, report["findings"][:3]


def _run_numpy(home: Path, script: str) -> dict[str, Any]:
    """Run ``script`` with the real NumPy of flightlog's environment; its full diagnosis."""
    from flightlog.client import Client

    workload = home.parent / "prep.py"
    workload.write_text(script)
    proc = cli(home, "run", "--project", "numpy", "--", sys.executable, str(workload), check=False, timeout=120)
    m = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)
    assert m, proc.stderr
    with Client(home) as c:
        return c.diagnose(m[1], auto_baseline=False)


def test_an_einsum_of_operands_whose_shared_subscript_differs_is_a_code_error(home: Path) -> None:
    """Attention scores of a query and a key projected to other widths: torch's ``einsum`` (real,
    here) says it as opt_einsum does behind ``jax.numpy.einsum`` — a subscript whose size differs
    between operands — a shape mismatch in the model code (JAX's read as bad_parameter 0.35)."""
    report = _run_numpy(
        home,
        "import torch\n"
        "q, k = torch.ones(2, 10, 64), torch.ones(2, 10, 32)\n"
        "print('computing attention', flush=True)\n"
        "scores = torch.einsum('bqd,bkd->bqk', q, k)\n",
    )
    top = report["findings"][0] if report["findings"] else {}
    assert top.get("category") == "code_error" and top["confidence"] >= 0.5, report["findings"][:3]
