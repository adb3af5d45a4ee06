"""The table of deprecated-torch-api (TD805) against the installed torch: each name either warns
when used with valid arguments, is gone (then it belongs to removed-torch-api), or, where the
table says it is deprecated in the documentation only, its docstring says so."""

from __future__ import annotations

import importlib
import warnings

import pytest
from conftest import import_torch

from torchdoctor.catalog.deprecated.td805_deprecated_torch_api import DEPRECATED

torch = import_torch()


def _square():
    a = torch.randn(3, 3, dtype=torch.float64)
    return a @ a.T + 3 * torch.eye(3, dtype=torch.float64)


def _identity(x):
    return x


# How each name is used with valid arguments (the name itself is passed in).
USES = {
    "torch.cuda.amp.autocast": lambda f: f(enabled=False),
    "torch.cuda.amp.GradScaler": lambda f: f(enabled=False),
    "torch.cuda.amp.custom_fwd": lambda f: f(_identity),
    "torch.cuda.amp.custom_bwd": lambda f: f(_identity),
    "torch.cpu.amp.autocast": lambda f: f(),
    "torch.cpu.amp.GradScaler": lambda f: f(),
    "torch.range": lambda f: f(0, 3),
    "torch.qr": lambda f: f(_square()),
    "torch.cholesky": lambda f: f(_square()),
    "torch.lu": lambda f: f(_square()),
    "torch.lu_solve": lambda f: f(
        torch.ones(3, 1, dtype=torch.float64), *torch.linalg.lu_factor(_square())
    ),
    "torch.triangular_solve": lambda f: f(torch.ones(3, 1, dtype=torch.float64), _square()),
    "torch.chain_matmul": lambda f: f(_square(), _square(), _square()),
    "torch.nn.utils.weight_norm": lambda f: f(torch.nn.Linear(2, 2)),
    "torch.nn.utils.weight_norm.weight_norm": lambda f: f(torch.nn.Linear(2, 2)),
    "torch.testing.assert_allclose": lambda f: f(torch.ones(2), torch.ones(2)),
    "torch.nn.utils.stateless.functional_call": lambda f: f(
        torch.nn.Linear(2, 2), {}, (torch.ones(1, 2),)
    ),
    "torch.cuda.memory_cached": lambda f: f(),
    "torch.cuda.max_memory_cached": lambda f: f(),
    "torch.backends.cuda.sdp_kernel": lambda f: f().__enter__(),
    "torch.library.impl_abstract": lambda f: f("td805_test::noop"),
    "torch.set_default_tensor_type": lambda f: f(torch.DoubleTensor),
    "functorch.vmap": lambda f: f(torch.sin)(torch.ones(2)),
    "functorch.grad": lambda f: f(torch.sin)(torch.ones(())),
    "functorch.grad_and_value": lambda f: f(torch.sin)(torch.ones(())),
    "functorch.vjp": lambda f: f(torch.sin, torch.ones(2)),
    "functorch.jvp": lambda f: f(torch.sin, (torch.ones(2),), (torch.ones(2),)),
    "functorch.jacrev": lambda f: f(torch.sin)(torch.ones(2)),
    "functorch.jacfwd": lambda f: f(torch.sin)(torch.ones(2)),
    "functorch.hessian": lambda f: f(torch.sin)(torch.ones(())),
    "functorch.functionalize": lambda f: f(torch.sin)(torch.ones(2)),
    "functorch.make_functional": lambda f: f(torch.nn.Linear(2, 2)),
    "functorch.make_functional_with_buffers": lambda f: f(torch.nn.Linear(2, 2)),
    "functorch.combine_state_for_ensemble": lambda f: f([torch.nn.Linear(2, 2)] * 2),
}
# Attributes whose reading is the use (module `__getattr__` warns).
READ = {"torch.has_cuda", "torch.has_cudnn", "torch.has_mps", "torch.has_mkldnn"}


def _resolve(qualname: str):
    """The object the name refers to, or None when it is gone."""
    module_name, _, attribute = qualname.rpartition(".")
    while module_name:
        try:
            target = importlib.import_module(module_name)
            break
        except ImportError:
            module_name, _, head = module_name.rpartition(".")
            attribute = f"{head}.{attribute}"
    else:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for part in attribute.split("."):
            target = getattr(target, part, None)
            if target is None:
                return None
    return target


def test_every_warning_symbol_has_a_use():
    warning = {name for name, successor in DEPRECATED.items() if not successor.documented}
    assert warning == set(USES) | READ


@pytest.mark.parametrize("qualname", sorted(DEPRECATED))
def test_the_symbol_is_deprecated_in_the_installed_torch(qualname):
    successor = DEPRECATED[qualname]
    if qualname in READ:
        module, _, attribute = qualname.rpartition(".")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            getattr(importlib.import_module(module), attribute, None)
        assert any("deprecated" in str(w.message) for w in caught), qualname
        return
    target = _resolve(qualname)
    if target is None:
        return  # gone in this torch: reported as removed, never wrongly as still working
    if successor.documented:
        assert "deprecated" in (target.__doc__ or ""), f"{qualname}: its docstring says nothing"
        return
    default_dtype = torch.get_default_dtype()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            USES[qualname](target)
        except (RuntimeError, AssertionError):
            pass  # a CUDA function without CUDA: the warning comes first
        finally:
            torch.set_default_dtype(default_dtype)
    messages = [str(w.message) for w in caught]
    assert any("deprecated" in m or "renamed" in m for m in messages), (qualname, messages)


def test_the_successors_exist():
    for qualname, successor in DEPRECATED.items():
        new = successor.new.removesuffix("()")
        assert _resolve(new) is not None, f"{qualname}: {new} does not exist"
