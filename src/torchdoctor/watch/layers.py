"""Layers whose behaviour depends on train/eval mode, as the mode monitors need them."""

from __future__ import annotations


def mode_dependent_layers(model) -> list[tuple[str, object]]:
    """(qualified name, layer) of the BatchNorm layers and active Dropout layers of `model`."""
    from torch import nn
    from torch.nn.modules.batchnorm import _BatchNorm

    found = []
    for name, layer in model.named_modules():
        if isinstance(layer, _BatchNorm) or (
            isinstance(layer, nn.modules.dropout._DropoutNd) and layer.p > 0
        ):
            found.append((name, layer))
    return found


def is_frozen(layer) -> bool:
    """No parameter of the layer is trained (a frozen BatchNorm, or one without affine)."""
    return not any(p.requires_grad for p in layer.parameters())
