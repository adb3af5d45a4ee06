"""TD602 reports any attribute a DataParallel/DistributedDataParallel wrapper lacks: the list
of what the wrappers do have must hold all of torch's own, or a new torch would make it cry
wolf."""

from __future__ import annotations

import inspect
import re

from conftest import import_torch

from torchdoctor.catalog.distributed.td602_dataparallel_attribute import WRAPPER_ATTRIBUTES

torch = import_torch()


def test_every_public_attribute_of_the_wrappers_is_known():
    from torch.nn.parallel import DataParallel, DistributedDataParallel

    wrapper = DataParallel(torch.nn.Linear(2, 2))
    public = {name for name in dir(wrapper) if not name.startswith("_")}
    public |= {name for name in dir(DistributedDataParallel) if not name.startswith("_")}
    assert public <= WRAPPER_ATTRIBUTES, sorted(public - WRAPPER_ATTRIBUTES)


def test_every_attribute_the_wrappers_set_on_themselves_is_known():
    # DistributedDataParallel cannot be built without a process group: read what its
    # methods assign to `self` instead.
    from torch.nn.parallel import data_parallel, distributed

    source = inspect.getsource(distributed) + inspect.getsource(data_parallel)
    assigned = set(re.findall(r"self\.([a-z]\w*)\s*(?::[^=\n]*)?=(?!=)", source))
    assert assigned <= WRAPPER_ATTRIBUTES, sorted(assigned - WRAPPER_ATTRIBUTES)
