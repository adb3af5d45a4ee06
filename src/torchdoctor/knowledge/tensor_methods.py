"""Tensor methods that return a new tensor and have an in-place twin (`x.add(y)` and
`x.add_(y)`): a call of one whose result is dropped changes nothing. Taken from torch's own API
(every public method `m` of `torch.Tensor` with a method `m_`); tests/test_tensor_methods.py
compares it with the installed torch, so a new release cannot leave it behind unseen."""

from __future__ import annotations

OUT_OF_PLACE = frozenset(
    """
abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr arccos arccosh arcsin
arcsinh arctan arctan2 arctanh as_strided asin asinh atan atan2 atanh baddbmm bernoulli
bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor ceil clamp
clamp_max clamp_min clip conj_physical copysign cos cosh cumprod cumsum deg2rad detach digamma
div divide eq erf erfc erfinv exp exp2 expm1 fix float_power floor floor_divide fmod frac gcd ge
greater greater_equal gt heaviside hypot i0 igamma igammac index_add index_copy index_fill
index_put index_reduce lcm ldexp le lerp less less_equal lgamma log log10 log1p log2 logical_and
logical_not logical_or logical_xor logit lt masked_fill masked_scatter mul multiply mvlgamma
nan_to_num ne neg negative nextafter not_equal polygamma pow put rad2deg reciprocal relu
remainder renorm resize resize_as round rsqrt scatter scatter_add scatter_reduce sgn sigmoid
sign sin sinc sinh sqrt square squeeze sub subtract swapaxes swapdims t tan tanh transpose tril
triu true_divide trunc unsqueeze xlogy
""".split()
)

# Those no other popular class has a method of that name for: a dropped call of one is reported
# even when the receiver's type is unknown (`add`, `sub`, `round`, `scatter` are methods of sets,
# dates, plots... too).
DISTINCTIVE = frozenset(
    """
masked_fill masked_scatter index_fill index_add index_copy index_put index_reduce scatter_add
scatter_reduce clamp_min clamp_max addcmul addcdiv addmm addbmm baddbmm addmv addr renorm
nan_to_num float_power true_divide floor_divide
""".split()
)

# Those a dropped call of is reported on a receiver of unknown type (in torch code): the
# distinctive ones and a few shape methods other popular classes lack. (`clip`, `reshape`,
# `view`... are in-place methods elsewhere: ultralytics' `Instances.clip()`, OpenVINO's
# `Model.reshape()`.) A project that defines a method of one of these names on a class of its
# own (brevitas' `EqualizationSourceWrapper.permute`) makes an unknown receiver unsure again.
UNMISTAKABLE = (
    frozenset("unsqueeze permute contiguous view_as reshape_as expand_as type_as".split())
    | DISTINCTIVE
)
