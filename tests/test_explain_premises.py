"""Each cause checks its premises: an answer that needs a Linear layer, numpy data or a
channels-last image is not given, or is demoted below the general answer, when the traceback
or the user's code says otherwise (issue 14's confident wrong answers, each a case here)."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text

SITE = "/usr/lib/python3.11/site-packages/torch/nn/modules"


def ranked(text: str):
    return diagnose(parse_text(text)).diagnoses


def user_traceback(script: Path, line: int, *library: tuple[str, str], error: str) -> str:
    """A traceback whose first frame is line `line` of the user's `script` (on disk, so that
    explain reads it), then frames in torch's modules, as Python prints them."""
    source = script.read_text().splitlines()[line - 1].strip()
    lines = [
        "Traceback (most recent call last):",
        f'  File "{script}", line {line}, in <module>',
        f"    {source}",
    ]
    for path, code in library:
        lines += [f'  File "{SITE}/{path}", line 134, in forward', f"    {code}"]
    return "\n".join([*lines, error, ""])


def write(tmp_path: Path, source: str) -> Path:
    script = tmp_path / "train.py"
    script.write_text(source)
    return script


LINEAR_FRAMES = (
    ("module.py", "return forward_call(*args, **kwargs)"),
    ("linear.py", "return F.linear(input, self.weight, self.bias)"),
)


def test_a_product_of_two_tensors_is_not_blamed_on_a_linear_layer(tmp_path):
    script = write(
        tmp_path, "import torch\na = torch.randn(4, 5)\nb = torch.randn(4, 5)\nc = a @ b\n"
    )
    error = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x5 and 4x5)"
    first = ranked(user_traceback(script, 4, error=error))[0]
    assert first.pitfall.name == "matmul-shape-mismatch"
    assert "in_features" not in first.cause + first.fix
    assert "b.T" in first.fix


def test_the_same_error_through_a_linear_layer_names_its_in_features(tmp_path):
    script = write(
        tmp_path, "import torch\nfc = torch.nn.Linear(4, 2)\ny = fc(torch.randn(3, 5))\n"
    )
    error = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x5 and 4x2)"
    first = ranked(user_traceback(script, 3, *LINEAR_FRAMES, error=error))[0]
    assert first.pitfall.name == "matmul-shape-mismatch"
    assert "in_features=5" in first.fix
    assert first.confidence >= 0.95


def test_a_grayscale_image_into_an_rgb_convolution_is_not_called_channels_last():
    error = (
        "RuntimeError: Given groups=1, weight of size [16, 3, 3, 3], expected "
        "input[8, 1, 32, 32] to have 3 channels, but got 1 channels instead\n"
    )
    names = [d.pitfall.name for d in ranked(error)]
    assert names[0] == "conv-input-shape-mismatch"
    assert "conv-input-channels-last" not in names


def test_an_explicit_double_without_numpy_is_not_numpy_data_first(tmp_path):
    script = write(
        tmp_path,
        "import torch\nmodel = torch.nn.Linear(4, 2)\nx = torch.randn(8, 4).double()\ny = model(x)\n",
    )
    error = "RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float"
    diagnoses = ranked(user_traceback(script, 4, *LINEAR_FRAMES, error=error))
    assert diagnoses[0].pitfall.name == "dtype-mismatch"
    numpy = next(d for d in diagnoses if d.pitfall.name == "float64-numpy-tensor")
    assert numpy.confidence < 0.6


def test_numpy_data_stays_the_first_answer_when_the_code_uses_numpy(tmp_path):
    script = write(
        tmp_path,
        "import numpy as np\nimport torch\nmodel = torch.nn.Linear(4, 2)\n"
        "x = torch.from_numpy(np.random.rand(8, 4))\ny = model(x)\n",
    )
    error = "RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float"
    first = ranked(user_traceback(script, 5, *LINEAR_FRAMES, error=error))[0]
    assert first.pitfall.name == "float64-numpy-tensor"
    assert first.confidence >= 0.85


def test_a_float64_model_with_float32_input_blames_the_model(tmp_path):
    script = write(
        tmp_path,
        "import torch\nmodel = torch.nn.Linear(4, 2).double()\nx = torch.randn(8, 4)\ny = model(x)\n",
    )
    error = "RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Double"
    diagnoses = ranked(user_traceback(script, 4, *LINEAR_FRAMES, error=error))
    assert diagnoses[0].pitfall.name == "dtype-mismatch"
    assert "weights are Double" in diagnoses[0].cause
    assert "float64-numpy-tensor" not in [d.pitfall.name for d in diagnoses]


def test_a_discarded_double_is_linked_as_the_root_of_a_dtype_mismatch(tmp_path):
    script = write(
        tmp_path,
        "import torch\nmodel = torch.nn.Linear(4, 2).double()\nx = torch.randn(8, 4)\n"
        "x.double()\ny = model(x)\n",
    )
    error = "RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Double"
    first = ranked(user_traceback(script, 5, *LINEAR_FRAMES, error=error))[0]
    assert first.pitfall.name == "tensor-result-discarded"
    assert first.root_of == "dtype-mismatch"
    assert first.location.line == 4


def test_of_two_errors_in_a_log_the_first_is_the_root_and_ranks_first():
    log = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 10, in <module>\n'
        "    loss.backward()\n"
        "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 30, in <module>\n'
        "    x = x.cuda()\n"
        "RuntimeError: CUDA error: out of memory\n"
    )
    names = [d.pitfall.name for d in ranked(log)]
    assert names[:2] == ["no-grad-fn", "cuda-out-of-memory"]


def test_a_bare_message_that_cannot_show_its_premise_is_not_a_confident_answer():
    """Nothing in a message pasted alone shows a Linear layer or numpy data: the answers that
    need them stay below 0.8, where answers are not presented as sure."""
    product = ranked("mat1 and mat2 shapes cannot be multiplied (577x1024 and 1152x12288)")[0]
    assert product.pitfall.name == "matmul-shape-mismatch" and product.confidence < 0.8
    dtypes = ranked("RuntimeError: expected scalar type Double but found Float")
    assert dtypes[0].pitfall.name == "dtype-mismatch"
    assert "numpy" in dtypes[0].cause
    assert dtypes[1].pitfall.name == "float64-numpy-tensor" and dtypes[1].confidence < 0.8


def test_one_layer_missing_in_full_is_no_prefix_story():
    """lightnet++: a DataParallel model misses four keys of one layer, and torch lists no
    unexpected key: a checkpoint without `module.` would have every key on both lists."""
    text = (
        "RuntimeError: Error(s) in loading state_dict for DataParallel:\n"
        '\tMissing key(s) in state_dict: "module.usm.norm_act.weight", '
        '"module.usm.norm_act.bias", "module.usm.norm_act.running_mean". \n'
    )
    names = [d.pitfall.name for d in ranked(text)]
    assert "state-dict-prefix-mismatch" not in names
    assert names[:1] == ["state-dict-key-mismatch"]


def test_one_layer_missing_cut_off_may_still_be_a_prefix():
    """The same keys with the list cut before its closing period: the unexpected list may have
    been cut away, so every listed key carrying `module.` is still read as the wrapper's."""
    text = (
        "RuntimeError: Error(s) in loading state_dict for DataParallel:\n"
        '\tMissing key(s) in state_dict: "module.usm.norm_act.weight", '
        '"module.usm.norm_act.bias", ...\n'
    )
    assert "state-dict-prefix-mismatch" in [d.pitfall.name for d in ranked(text)]


def test_main_builtin_class_under_torch_jit_is_not_a_pickled_model():
    """inspect fails alike for a class scripted from a REPL: torch.jit reads source too."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/site-packages/torch/jit/_script.py", line 1, in script\n'
        "    ast = get_jit_class_def(obj, obj.__name__)\n"
        "TypeError: <module '__main__'> is a built-in class\n"
    )
    assert "whole-module-saved" not in [d.pitfall.name for d in ranked(text)]


def test_retold_keys_without_a_wrapper_prefix_are_no_prefix_story():
    text = (
        'load_state_dict fails: the model has "conv1.weight" but the checkpoint "stem.conv1.weight"'
    )
    assert "state-dict-prefix-mismatch" not in [d.pitfall.name for d in ranked(text)]


# hard-coded-batch-size's index errors need a batch: a tensor the failing line names a batch, or
# a fixed-count loop in a text that speaks of a batch size (DeepVO#1, deformableLKA#20).
def index_error(source: str, error: str) -> str:
    return "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "train.py", line 12, in <module>',
            f"    {source}",
            error,
            "",
        ]
    )


def test_a_numbered_sample_of_a_batch_is_the_smaller_last_batch():
    text = index_error(
        "image = image_batch[1, 0:1, :, :]",
        "IndexError: index 1 is out of bounds for dimension 0 with size 1",
    )
    first = ranked(text)[0]
    assert first.pitfall.name == "hard-coded-batch-size"
    assert "image_batch[0]" in first.fix


def test_a_numbered_index_of_another_tensor_is_only_out_of_range():
    text = index_error(
        "score = scores[1, 0]", "IndexError: index 1 is out of bounds for dimension 0 with size 1"
    )
    assert [d.pitfall.name for d in ranked(text)][:1] == ["index-out-of-range"]


def test_a_numbered_batch_index_on_another_dimension_is_only_out_of_range():
    text = index_error(
        "x = batch[:, 3]", "IndexError: index 3 is out of bounds for dimension 1 with size 3"
    )
    assert "hard-coded-batch-size" not in [d.pitfall.name for d in ranked(text)]


LOOP = """IndexError: index 2 is out of bounds for dimension 0 with size 2

def get_accuracy(outputs, labels):
    for j in range(10):
        diff += mse(outputs[j], labels[j])
"""


def test_a_fixed_count_loop_over_a_batch_runs_off_its_end():
    first = ranked(LOOP + "batch_size = 2\n")[0]
    assert first.pitfall.name == "hard-coded-batch-size"
    assert "range(outputs.size(0))" in first.fix


def test_a_fixed_count_loop_without_a_batch_in_the_text_is_only_out_of_range():
    assert [d.pitfall.name for d in ranked(LOOP)][:1] == ["index-out-of-range"]


def test_a_loop_that_fits_the_tensor_is_not_blamed():
    text = LOOP.replace("range(10)", "range(2)") + "batch_size = 2\n"
    assert "hard-coded-batch-size" not in [d.pitfall.name for d in ranked(text)]


_CUT_IN_MAKE_GRADS = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 75, in train_epoch\n'
    "    {call}\n"
    '  File "/env/lib/python3.8/site-packages/torch/tensor.py", line 245, in backward\n'
    "    torch.autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)\n"
    '  File "/env/lib/python3.8/site-packages/torch/autograd/__init__.py", line 141, in backward\n'
    "    grad_tensors_ = _make_grads(\n"
)
_GATHER_WARNING = (
    "/env/lib/python3.8/site-packages/torch/nn/parallel/_functions.py:65: UserWarning: Was "
    "asked to gather along dimension 0, but all input tensors were scalars; will instead "
    "unsqueeze and return a vector.\n"
)


def test_traceback_cut_in_make_grads_needs_a_backward_without_gradient():
    """Cut in `_make_grads` under `loss.backward()`: the implicit gradient of a non-scalar; under
    `loss.backward(grad)` the shape of `grad` may be what failed, so no answer."""
    plain = _CUT_IN_MAKE_GRADS.format(call="loss.backward()")
    assert [d.pitfall.name for d in ranked(plain)][:1] == ["non-scalar-backward"]
    given = _CUT_IN_MAKE_GRADS.format(call="loss.backward(weights)")
    assert "non-scalar-backward" not in [d.pitfall.name for d in ranked(given)]


def test_dataparallel_gather_warning_alone_is_no_non_scalar_backward():
    """The warning is printed on every step where the losses are then averaged: harmless
    without a backward that failed on the vector."""
    assert "non-scalar-backward" not in [d.pitfall.name for d in ranked(_GATHER_WARNING)]
    cut = _GATHER_WARNING + _CUT_IN_MAKE_GRADS.format(call="loss.backward()")
    best = ranked(cut)[0]
    assert best.pitfall.name == "non-scalar-backward" and "DataParallel" in best.cause


def test_partially_initialized_package_whose_own_files_ran_is_no_shadow():
    """A circular import inside the installed torch (its own `_inductor/config.py` ran): no
    project file named `torch.py` was imported instead."""
    text = (
        '  File "/env/lib/python3.11/site-packages/torch/_inductor/config.py", line 9, in '
        "is_fbcode\n"
        '    return not hasattr(torch.version, "git_version")\n'
        "AttributeError: partially initialized module 'torch' has no attribute 'version' (most "
        "likely due to a circular import)\n"
    )
    assert "stdlib-shadowing-file" not in [d.pitfall.name for d in ranked(text)]
    # Alone, `torch.version` still tells of torch's own modules (pytorch/pytorch#134019): a
    # user's `torch.py` touches `torch.nn` first.
    alone = text.splitlines()[-1]
    assert "stdlib-shadowing-file" not in [d.pitfall.name for d in ranked(alone)]
    first_use = alone.replace("'version'", "'nn'")
    assert "stdlib-shadowing-file" in [d.pitfall.name for d in ranked(first_use)]


_REFUSED = (
    "WeightsUnpickler error: Unsupported global: GLOBAL {name} was not an allowed global by "
    "default. Please use `torch.serialization.add_safe_globals([{short}])` or the "
    "`torch.serialization.safe_globals([{short}])` context manager to allowlist this global if "
    "you trust this class/function.\n"
)


def test_torch_model_class_without_user_code_is_anyones_pickle():
    """`torch.nn...Sequential` in an application's log: who pickled it is unknown, so the load
    is what to change; the user's own class (`model.Net`) still tells of their own save."""
    torch_class = _REFUSED.format(name="torch.nn.modules.container.Sequential", short="Sequential")
    assert [d.pitfall.name for d in ranked(torch_class)][:1] == ["load-weights-only"]
    own_class = _REFUSED.format(name="model.Net", short="Net")
    assert [d.pitfall.name for d in ranked(own_class)][:1] == ["whole-module-saved"]


def test_exploding_loss_needs_growth_or_a_huge_gradient_norm():
    """A loss that grows ten-thousandfold, or one of 1e8 with a gradient norm as large, is
    diverging; a large loss that falls (a sum over every pixel) and fp16's growing loss scale
    are not."""
    growing = "iter 0 || Loss: 3.2635 ||\niter 40 || Loss: 20.0848 ||\niter 50 || Loss: 29821698048.0 ||\n"
    assert [d.pitfall.name for d in ranked(growing)][:1] == ["nan-loss"]
    norm = "Epoch [1][500/5000] lr: 2.0e-02, loss_cls: 2326544033.5, loss: 2461733416.9, grad_norm: 1170372919273.5\n"
    assert [d.pitfall.name for d in ranked(norm)][:1] == ["nan-loss"]
    falling = "epoch 1 loss: 912345678.0\nepoch 2 loss: 81234567.0\nepoch 3 loss: 9123456.0\n"
    assert "nan-loss" not in [d.pitfall.name for d in ranked(falling)]
    scale = "step 10 loss: 2.31 loss_scale: 128.0\nstep 9000 loss: 1.02 loss_scale: 16777216.0\n"
    assert "nan-loss" not in [d.pitfall.name for d in ranked(scale)]
    huge_alone = "step 1 loss: 912345678.0, grad_norm: 35.2\n"
    assert "nan-loss" not in [d.pitfall.name for d in ranked(huge_alone)]


# Causes read from a report whose traceback was cut off before its exception line: each needs
# what the text says besides the retold words, and gives way to a printed exception.

CUT_TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 12, in <module>
    out = model(images)
  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1541, in _call_impl
    return forward_call(*args, **kwargs)
  File "model.py", line 40, in forward
    h = self.conv_in(x)
"""


def test_a_retold_not_compiled_with_cuda_over_a_cut_traceback_is_a_cpu_build():
    first = ranked("# Torch not compiled with CUDA enabled\n\n" + CUT_TRACEBACK)[0]
    assert first.pitfall.name == "cpu-only-torch-build"


def test_a_retold_not_compiled_with_cuda_on_an_xpu_build_is_not_sure():
    text = "# Torch not compiled with CUDA enabled (torch 2.5.1+xpu)\n\n" + CUT_TRACEBACK
    assert all(d.confidence <= 0.6 for d in ranked(text))


def test_a_retold_not_compiled_with_cuda_gives_way_to_the_printed_exception():
    text = (
        "I reinstalled, now Torch not compiled with CUDA enabled went away but:\n\n"
        + CUT_TRACEBACK
        + "ValueError: too many values to unpack (expected 2)\n"
    )
    assert "cpu-only-torch-build" not in [d.pitfall.name for d in ranked(text)]


def test_four_channel_images_need_a_convolution_where_the_traceback_stops():
    assert ranked("# RGBA png images fail\n\n" + CUT_TRACEBACK)[0].pitfall.name == (
        "conv-input-shape-mismatch"
    )
    other = CUT_TRACEBACK.replace("self.conv_in(x)", "self.attention(x)")
    assert "conv-input-shape-mismatch" not in [
        d.pitfall.name for d in ranked("# RGBA png images fail\n\n" + other)
    ]


def test_a_retold_local_object_needs_the_spawning_frames():
    spawn = (
        "# Can't pickle local object\n\n"
        '  File "C:\\Python310\\lib\\multiprocessing\\popen_spawn_win32.py", line 93, in '
        "__init__\n    reduction.dump(process_obj, to_child)\n"
    )
    assert ranked(spawn)[0].pitfall.name == "dataloader-worker-pickle"
    assert "dataloader-worker-pickle" not in [
        d.pitfall.name for d in ranked("# Can't pickle local object\n\nwhen I save the model\n")
    ]


def test_an_unquoted_class_without_module_is_not_a_sentence_word():
    named = ranked("Fix `UNet2DConditionModel object has no attribute 'module'` error")
    assert named[0].pitfall.name == "dataparallel-attribute"
    assert "dataparallel-attribute" not in [
        d.pitfall.name for d in ranked("The object has no attribute 'module' here")
    ]


def names(text: str) -> list[str]:
    return [d.pitfall.name for d in ranked(text)]


def test_a_loss_class_given_tensors_is_no_mask_combined():
    text = (
        'RuntimeError: bool value of Tensor with more than one value is ambiguous, in "loss = '
        'nn.CrossEntropyLoss(output, labels)"'
    )
    assert names(text) == []
    called = text.replace("nn.CrossEntropyLoss(output, labels)", "criterion(output, labels)")
    assert names(called)[0] == "boolean-operator-on-tensors"


def test_configure_model_unexpected_keys_are_not_another_model():
    error = (
        "RuntimeError: Error(s) in loading state_dict for BoringModel:\n"
        '\tUnexpected key(s) in state_dict: "layer.weight", "layer.bias".\n'
    )
    assert names("I build the layers in `configure_model` and resume.\n" + error) == []
    assert names(error)[0] == "state-dict-key-mismatch"


def test_a_dtype_pair_quoted_under_a_bare_conversion_is_not_a_mix():
    error = "# RuntimeError: expected scalar type Float but found Double\n"
    assert names("b = torch.load('t.pt')\nc = b.to(torch.float32)\n" + error) == []
    assert names("b = torch.load('t.pt')\nc = model(b)\n" + error)[0] == "dtype-mismatch"


def test_a_refused_global_that_runs_code_is_never_advised_to_allowlist():
    """`posix.system` refused by weights_only=True: the refusal protected the user; the answer
    warns and never offers `add_safe_globals` for it, as the allowlist advice does for data."""
    for name in ("posix.system", "builtins.exec", "cProfile.run"):
        short = name.rpartition(".")[2]
        top = ranked(_REFUSED.format(name=name, short=short))[0]
        assert top.pitfall.name == "load-weights-only"
        assert "malicious" in top.cause and "never allow" in top.fix, top.fix
        assert "add_safe_globals([" not in top.fix
    numpy_scalar = ranked(_REFUSED.format(name="numpy.core.multiarray.scalar", short="scalar"))
    assert "add_safe_globals([scalar])" in numpy_scalar[0].fix


def test_the_refused_global_told_alone_is_a_weights_only_refusal():
    """An issue title carrying only torch >= 2.4's phrase."""
    top = ranked("Pytorch issue: Unsupported global: GLOBAL omegaconf.nodes.AnyNode")[0]
    assert top.pitfall.name == "load-weights-only" and "config object" in top.cause


_FIND_CLASS_TRACEBACK = """Traceback (most recent call last):
  File "demo.py", line 3, in <module>
    model = torch.load("epoch_48")
  File "/env/lib/python3.7/site-packages/torch/serialization.py", line 882, in _load
    result = unpickler.load()
  File "/env/lib/python3.7/site-packages/torch/serialization.py", line 875, in find_class
    return super().find_class(mod_name, name)
  File "/ide/pydev_import_hook.py", line 21, in do_import
    module = self._system_import(name, *args, **kwargs)
ModuleNotFoundError
"""


def test_a_bare_module_not_found_under_the_unpicklers_find_class_is_a_pickled_model():
    names = [d.pitfall.name for d in diagnose(parse_text(_FIND_CLASS_TRACEBACK)).diagnoses]
    assert names[:1] == ["whole-module-saved"]
    elsewhere = _FIND_CLASS_TRACEBACK.replace("serialization.py", "loader.py")
    assert "whole-module-saved" not in [
        d.pitfall.name for d in diagnose(parse_text(elsewhere)).diagnoses
    ]


def test_a_missing_module_told_while_loading_a_checkpoint_in_words():
    told = "Attempting to load the checkpoint throws ModuleNotFoundError: No module named 'models'"
    assert [d.pitfall.name for d in diagnose(parse_text(told)).diagnoses][:1] == [
        "whole-module-saved"
    ]
    other = "Running train.py to load the dataset throws ModuleNotFoundError: No module named 'cv2'"
    assert diagnose(parse_text(other)).diagnoses == []
