"""Phrasings `explain` reads beyond torch's current messages: older releases' wording, library
wrappers (mmcv, torch.library), pastes that lost their layout, and facts carried by errors that
user code raises."""

from __future__ import annotations

import pytest

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text


def names(text: str) -> list[str]:
    return [d.pitfall.name for d in diagnose(parse_text(text), link=False).diagnoses]


@pytest.mark.parametrize(
    "text, expected",
    [
        # torch.library's register_autograd
        (
            "RuntimeError: The backward formula for mylib.scale.default returned an incorrect "
            "number of gradients (expected 2, got 3). Expected one gradient for each forward input",
            "autograd-function-gradient-count",
        ),
        # the checkpoint warning as a terminal wrapped it
        (
            "UserWarning: torch.utils.checkpoint:\n please pass in use_reentrant=True or "
            "use_reentrant=False\nexplicitly. The default value of use_reentrant will be updated",
            "checkpoint-use-reentrant",
        ),
        ("error \u201cTHC/THC.h\u201d: No such file or directory", "cpp-extension-removed-api"),
        ("RuntimeError: no valid convolution algorithms available in CuDNN", "cudnn-failure"),
        (
            "RuntimeError: Expected tensor for argument #1 'input' to have the same device as "
            "tensor for argument #2 'weight'; but device 1 does not equal 0",
            "device-mismatch",
        ),
        (
            "RuntimeError: index out of range: Tried to access index 512 out of table with 511 "
            "rows. at /pytorch/aten/src/TH/generic/THTensorEvenMoreMath.cpp:191",
            "embedding-index-out-of-range",
        ),
        ('IndexError: "Index out of range in self"', "embedding-index-out-of-range"),
        (
            "Watchdog: Some NCCL operations have failed or timed out. Due to the asynchronous "
            "nature of CUDA kernels, subsequent GPU operations might run on corrupted data.",
            "nccl-collective-timeout",
        ),
        # Python 3.7 does not name the module the name was not found in
        (
            '  File "apex/amp/_initialize.py", line 2, in <module>\n'
            "    from torch._six import container_abcs\n"
            "ImportError: cannot import name 'container_abcs'",
            "removed-torch-api",
        ),
        (
            "RuntimeError: 0D or 1D target tensor expected, multi-target not supported",
            "loss-target-shape-mismatch",
        ),
        (
            "RuntimeError: only batches of spatial targets supported (3D tensors) but got "
            "targets of dimension: 4",
            "loss-target-shape-mismatch",
        ),
        ("RuntimeError: expected dtype Double but got dtype Float", "dtype-mismatch"),
        ("RuntimeError: expected FloatTensor but found DoubleTensor", "dtype-mismatch"),
        (
            "The model gives two different predictions with the same input, why?",
            "eval-mode-missing",
        ),
        (
            "docker shm is too small: training crashes once num_workers > 0",
            "dataloader-shm-exhausted",
        ),
        # fvcore's checkpointer (detectron2) skips a tensor of another shape
        (
            "WARNING [fvcore.common.checkpoint]: Skip loading parameter 'roi_heads.box_predictor."
            "cls_score.weight' to the model due to incompatible shapes: (81, 1024) in the "
            "checkpoint but (11, 1024) in the model! You might want to double check if this is "
            "expected.",
            "state-dict-shape-mismatch",
        ),
        # only the unexpected list, each key with a wrapped submodule inside it
        (
            'Unexpected key(s) in state_dict: "features.module.0.weight", '
            '"features.module.0.bias", "features.module.3.weight", "featu',
            "state-dict-prefix-mismatch",
        ),
    ],
)
def test_phrasing_is_recognised(text, expected):
    found = names(text)
    assert found and found[0] == expected, found


# A traceback pasted from a page that dropped the source lines' indentation.
UNINDENTED = """\
  File "detect.py", line 20, in load
self.model = torch.load(path, map_location=device)['model']
  File "torch/serialization.py", line 593, in load
return _legacy_load(opened_file, map_location, pickle_module, **pickle_load_args)
  File "torch/serialization.py", line 773, in _legacy_load
result = unpickler.load()
ModuleNotFoundError: No module named 'models.yolo'
"""


def test_a_traceback_that_lost_its_indentation_keeps_its_frames():
    report = parse_text(UNINDENTED)
    [block] = report.blocks
    assert [f.source for f in block.frames][-1] == "result = unpickler.load()"
    assert names(UNINDENTED)[0] == "whole-module-saved"


def test_mmcv_key_lists_are_read_as_a_state_dict_error():
    text = (
        "unexpected key in source state_dict: fc.weight, fc.bias\n\n"
        "missing keys in source state_dict: classifier.weight, classifier.bias\n"
    )
    assert names(text)[0] == "state-dict-key-mismatch"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("KeyError: 'backbone.bn1.num_batches_tracked'", "state-dict-num-batches-tracked"),
        ("KeyError: 'learning_rate'", None),
    ],
)
def test_a_key_error_on_a_batchnorm_counter(text, expected):
    found = names(text)
    assert (found[0] if found else None) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # a standard module found inside an installed package: Python started in its folder
        (
            "ImportError: cannot import name 'Random' from 'random' "
            "(/opt/conda/lib/python3.10/site-packages/torch/random.py)",
            "stdlib-shadowing-file",
        ),
        # a package's own module of that name, imported as such: nothing shadows anything
        (
            "ImportError: cannot import name 'seed' from 'torch.random' "
            "(/opt/conda/lib/python3.10/site-packages/torch/random.py)",
            None,
        ),
    ],
)
def test_a_standard_module_inside_an_installed_package(text, expected):
    found = names(text)
    assert (found[0] if found else None) == expected


@pytest.mark.parametrize(
    "text, cause_names",
    [
        ("AttributeError: 'RetinaNet' object has no attribute 'module'", "not wrapped"),
        ("AttributeError: 'DataParallel' object has no attribute 'predict'", "`.module`"),
    ],
)
def test_module_attribute_both_ways(text, cause_names):
    [first, *_] = diagnose(parse_text(text), link=False).diagnoses
    assert first.pitfall.name == "dataparallel-attribute"
    assert cause_names in first.cause


@pytest.mark.parametrize(
    "text, expected",
    [
        # github.com/pytorch/pytorch/issues/46723: a `multiprocessing.py` beside the script
        (
            "ModuleNotFoundError: No module named 'multiprocessing.util'; 'multiprocessing' is "
            "not a package",
            "stdlib-shadowing-file",
        ),
        ("no module named 'torch.nn'; 'torch' is not a package", "stdlib-shadowing-file"),
        # `random` is a plain module: asking for a submodule of it is the user's own mistake
        ("ModuleNotFoundError: No module named 'random.x'; 'random' is not a package", None),
    ],
)
def test_a_package_found_as_a_plain_module(text, expected):
    found = names(text)
    assert (found[0] if found else None) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # github.com/sanghyun-son/edsr-pytorch/issues/162: a copy of PyTorch 1.0's dataloader.py
        (
            "ImportError: cannot import name '_update_worker_pids' from 'torch._C' "
            "(/usr/lib/python3.7/site-packages/torch/_C.cpython-37m-x86_64-linux-gnu.so)",
            "removed-torch-api",
        ),
        (
            "ImportError: cannot import name '_DataLoaderIter' from 'torch.utils.data.dataloader'",
            "removed-torch-api",
        ),
        # Python 3.6 names no module, and nothing else here does
        ("ImportError: cannot import name '_update_worker_pids'", None),
        # the project's own helper of that name
        ("ImportError: cannot import name '_worker_loop' from 'mmcv.loader'", None),
    ],
)
def test_private_dataloader_helpers_of_pytorch_1_0(text, expected):
    found = names(text)
    assert (found[0] if found else None) == expected


def test_an_attribute_an_old_torch_lacks_is_not_blamed_on_a_shadowing_file():
    assert "stdlib-shadowing-file" not in names(
        "AttributeError: module 'torch' has no attribute 'device'"
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        # the initial state made for the configured batch, the last batch smaller
        (
            "RuntimeError: Expected hidden[0] size (2, 4, 256), got (2, 64, 256)",
            "hard-coded-batch-size",
        ),
        ("RuntimeError: Expected hidden size (2, 8, 20), got [2, 16, 20]", "hard-coded-batch-size"),
        # the layers differ, not the batch: not this
        ("RuntimeError: Expected hidden size (2, 8, 20), got [1, 8, 20]", None),
        ("RuntimeError: Trying to resize storage that is not resizable", "collate-size-mismatch"),
    ],
)
def test_sizes_of_another_batch(text, expected):
    found = names(text)
    assert (found[0] if found else None) == expected, found


def test_an_optimizer_with_no_parameters_points_at_unregistered_layers():
    [first, *_] = diagnose(
        parse_text("ValueError: optimizer got an empty parameter list"), link=False
    ).diagnoses
    assert first.pitfall.name == "unregistered-tensor-attribute"
    assert "nn.ModuleList" in first.cause and first.confidence < 0.8


@pytest.mark.parametrize(
    "text, expected",
    [
        ("RuntimeError: NCCL communicator was aborted on rank 1.", "nccl-collective-timeout"),
        ("RuntimeError: CUDA error: initialization error", "cuda-init-before-fork"),
    ],
)
def test_symptoms_with_a_usual_cause_are_shown_not_asserted(text, expected):
    [first, *_] = diagnose(parse_text(text), link=False).diagnoses
    assert first.pitfall.name == expected and first.confidence < 0.8


@pytest.mark.parametrize(
    "text, expected",
    [
        # argparse's usage-error exit, where a notebook shows it
        (
            "An exception has occurred, use %tb to see the full traceback.\n\nSystemExit: 2\n",
            "argparse-in-notebook",
        ),
        ("args = parser.parse_args() SystemExit: 2", "argparse-in-notebook"),
        ('invalid syntax: f"conv_{module_i}"', "syntax-error"),
        (
            "TypeError: fft_rfft() got an unexpected keyword argument 'onesided'",
            "removed-torch-api",
        ),
        ('pytorch 1.8.1: module \u2018torch\u2018 has no attribute "rfft"', "removed-torch-api"),
        (
            "ValueError: Requested crop size (64, 64) is larger than the image size (48, 128)",
            "random-crop-too-large",
        ),
        (
            "None of the inputs have requires_grad=True. Gradients will be None",
            "checkpoint-use-reentrant",
        ),
        ("> ValueError: out_channels must be divisible by groups", "conv-groups-mismatch"),
        ("RuntimeError: unexpected EOF. The file might be corrupted", "corrupted-checkpoint"),
        (
            "I am getting the error, `DataParallel object has no attribute 'config'`",
            "dataparallel-attribute",
        ),
        (
            'got the error "Indices should be either on cpu or on the same device as the indexed '
            'tensor".',
            "device-mismatch",
        ),
        (
            "If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU.",
            "load-without-map-location",
        ),
        ("ERROR: Could not consume arg: --local_rank=0", "local-rank-argument"),
        (
            '  File "transforms/functional.py", line 494, in resized_crop\n'
            "    assert _is_pil_image(img), 'img should be PIL Image'\n"
            "AssertionError: img should be PIL Image\n",
            "pil-transform-on-tensor",
        ),
        (" RuntimeError: unable to open shared memory object", "shared-memory-open-failed"),
        (
            "PicklingError: Can't pickle <class 'fastai.basic_train.Recorder'>: \n"
            "it's not the same object as fastai.basic_train.Recorder",
            "stale-object-after-reload",
        ),
        (
            "When I load .pth file, ModuleNotFoundError: No module named 'models' occur.",
            "whole-module-saved",
        ),
        # CUDA's initialization error as c10 and torch 0.4 print it, DataLoader workers nearby
        (
            "an instance of 'c10::CUDAError' initialization error, only with num_workers > 0",
            "cuda-init-before-fork",
        ),
        (
            "Getting Cuda error (3): initialization error when iterating the DataLoader",
            "cuda-init-before-fork",
        ),
        # typographic apostrophes, as a web page or an editor retypes the message
        ("TypeError: can\u2019t convert CUDA tensor to numpy.", "numpy-on-grad-or-cuda-tensor"),
        # a loss term named `loss_<part>`, as detectron2 and mmdetection print them
        ("iter: 499  loss_cls: nan  loss_box_reg: 0.488  lr: 0.004995", "nan-loss"),
        # Colab folds the frames of installed packages into one `N frames` line
        (
            "ImportError                               Traceback (most recent call last)\n"
            "<ipython-input-3-37004d024db3> in <module>()\n"
            "---> 28 import timm\n"
            "\n"
            "6 frames\n"
            "/usr/local/lib/python3.6/dist-packages/timm/layers/helpers.py in <module>()\n"
            "----> 6 from torch._six import container_abcs\n"
            "\n"
            "ImportError: cannot import name 'container_abcs'\n",
            "removed-torch-api",
        ),
    ],
)
def test_more_phrasings_are_recognised(text, expected):
    found = names(text)
    assert found and found[0] == expected, found


@pytest.mark.parametrize(
    "text",
    [
        "SystemExit: 2",  # a script's own exit status, nothing says notebook or argparse
        "ModuleNotFoundError: No module named 'models'",  # nothing says a checkpoint was loaded
        # a name that is not torch._six's, imported from elsewhere
        '  File "a.py", line 1, in <module>\n    from helpers import container_abcs\n'
        "ImportError: cannot import name 'container_abcs'",
    ],
)
def test_bare_symptoms_without_their_context_are_not_guessed(text):
    assert names(text) == []


@pytest.mark.parametrize(
    "text",
    [
        'csrc/ball_query.cu(40): error: identifier "THArgCheck" is undefined',
        "src/nms.cpp:12:5: error: 'THFloatTensor' has not been declared",
        "src/nms.cpp:12:5: error: \u2018THCudaTensor\u2019 does not name a type",
        "src/roi.cpp:3:1: error: use of undeclared identifier 'THError'",
    ],
)
def test_any_legacy_th_name_undeclared_is_the_removed_api(text):
    assert names(text)[:1] == ["cpp-extension-removed-api"]


def test_an_all_capitals_th_macro_is_not_the_legacy_api():
    assert names('kernel.cu(9): error: identifier "THRESHOLD_MAX" is undefined') == []
    assert names('KERNEL.CU(9): ERROR: IDENTIFIER "THRESHOLD_MAX" IS UNDEFINED') == []


def test_samples_that_are_lists_of_different_lengths_are_the_collate():
    found = names("RuntimeError: each element in list of batch should be of equal size")
    assert found[:1] == ["collate-size-mismatch"]


@pytest.mark.parametrize(
    "text, expected",
    [
        # weights stored in float8 reaching a matmul, in the current and the older message
        (
            "mat1 and mat2 must have the same dtype, but got BFloat16 and Float8_e5m2",
            "dtype-mismatch",
        ),
        (
            "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: c10::Half != "
            "c10::Float8_e4m3fn",
            "dtype-mismatch",
        ),
        # torch.load's messages cut short, or only their last sentence left
        ("attempting to deserialize object on CUDA device 1", "load-without-map-location"),
        (
            "Check the documentation of torch.load to learn more about types accepted by default "
            "with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.",
            "load-weights-only",
        ),
        ("Index is out of bounds for dimension 1 with size", "index-out-of-range"),
        # an embedding's message on a logger's line, the traceback cut before its exception line
        (
            "2024-01-01 12:00:00,123 - root - ERROR - index out of range in self\n"
            "Traceback (most recent call last):\n"
            '  File "run.py", line 3, in <module>\n',
            "embedding-index-out-of-range",
        ),
        # an issue's title over a training log that shows no exception
        ("Loss goes to NaN after 2 epochs\niter 0: loss 3.54\niter 1: loss 3.02\n", "nan-loss"),
        (
            "The error says that there is an inplace operation that modified a variable in the "
            "computational graph.",
            "inplace-modified-for-grad",
        ),
    ],
)
def test_cut_and_retold_messages_are_recognised(text, expected):
    found = names(text)
    assert found and found[0] == expected, found


@pytest.mark.parametrize(
    "text",
    [
        # a leaf's in-place error is another one
        "Told that a leaf Variable that requires grad is being used in an in-place operation, "
        "it is about the computational graph.",
        # a title about NaN over a log whose exception is the crash to explain
        "NaN loss after a few steps\nTraceback (most recent call last):\n"
        "  File \"t.py\", line 1, in <module>\nKeyError: 'labels'\n",
        # a file that is not a pickle: corrupted-checkpoint's story
        "_pickle.UnpicklingError: Weights only load failed. Unsupported operand 118\n"
        "Check the documentation of torch.load to learn more about types accepted by default "
        "with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.",
    ],
)
def test_cut_and_retold_messages_keep_their_premises(text):
    assert not {"inplace-modified-for-grad", "nan-loss", "load-weights-only"} & set(names(text))
