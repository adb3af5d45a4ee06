"""Short real error texts of the data-loading and tensor-shape entries rank the right cause first,
with the numbers of the error in the cause. Texts reproduced with torch 2.13 CPU unless a
comment names the public issue they come from."""

from __future__ import annotations

import pytest

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text

SITE = "/usr/lib/python3.11/site-packages"


def ranked(text: str):
    return diagnose(parse_text(text), "en", link=False).diagnoses


def top(text: str):
    diagnoses = ranked(text)
    assert diagnoses, "nothing recognised"
    return diagnoses[0]


def traceback(*frames: tuple[str, str], error: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, function in frames:
        lines.append(f'  File "{path}", line 10, in {function}')
    return "\n".join([*lines, error, ""])


def test_linear_in_features_named_from_the_numbers():
    text = traceback(
        ("train.py", "<module>"),
        (f"{SITE}/torch/nn/modules/linear.py", "forward"),
        error="RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x9216 and 4608x128)",
    )
    found = top(text)
    assert found.pitfall.name == "matmul-shape-mismatch"
    assert "in_features=9216" in found.cause and "4608" in found.cause
    assert "in_features=9216" in found.fix


def test_old_size_mismatch_m1_m2():
    # github.com/moskomule/senet.pytorch/issues/35
    found = top(
        "RuntimeError: size mismatch, m1: [1 x 256], m2: [64 x 4] at "
        "/opt/conda/conda-bld/pytorch_1549627089062/work/aten/src/TH/generic/"
        "THTensorMath.cpp:940\n"
    )
    assert found.pitfall.name == "matmul-shape-mismatch"
    assert "in_features=256" in found.cause


def test_matmul_dtype_is_not_a_shape_problem():
    names = [
        d.pitfall.name
        for d in ranked(
            "RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float\n"
        )
    ]
    assert "matmul-shape-mismatch" not in names


def test_channels_last_input_is_permuted():
    found = top(
        "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected "
        "input[8, 224, 224, 3] to have 3 channels, but got 224 channels instead\n"
    )
    assert found.pitfall.name == "conv-input-channels-last"
    assert found.confidence >= 0.9
    assert "permute(0, 3, 1, 2)" in found.fix


def test_grayscale_input_is_a_channel_count_mismatch_not_channels_last():
    found = top(
        "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected "
        "input[1, 1, 224, 224] to have 3 channels, but got 1 channels instead\n"
    )
    assert found.pitfall.name == "conv-input-shape-mismatch"
    assert "permute" not in found.fix and "grayscale" in found.cause


def test_missing_batch_dimension_pytorch_1x():
    found = top(
        "RuntimeError: Expected 4-dimensional input for 4-dimensional weight "
        "[64, 3, 7, 7], but got 3-dimensional input of size [3, 224, 224] instead\n"
    )
    assert found.pitfall.name == "conv-input-shape-mismatch"
    assert "unsqueeze(0)" in found.fix


COLLATE_IN_WORKER = f"""\
Traceback (most recent call last):
  File "train.py", line 5, in <module>
    for batch in loader:
  File "{SITE}/torch/utils/data/dataloader.py", line 1567, in _process_data
    data.reraise()
  File "{SITE}/torch/_utils.py", line 794, in reraise
    raise exception
RuntimeError: Caught RuntimeError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "{SITE}/torch/utils/data/_utils/worker.py", line 374, in _worker_loop
    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]
  File "{SITE}/torch/utils/data/_utils/fetch.py", line 57, in fetch
    return self.collate_fn(data)
  File "{SITE}/torch/utils/data/_utils/collate.py", line 274, in collate_tensor_fn
    out = elem.new(storage).resize_(len(batch), *list(elem.size()))
RuntimeError: {{message}}
"""


def test_collate_stack_in_worker():
    text = COLLATE_IN_WORKER.format(
        message="stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0 "
        "and [3, 224, 199] at entry 1"
    )
    found = top(text)
    assert found.pitfall.name == "collate-size-mismatch"
    assert found.confidence >= 0.9 and "[3, 224, 199]" in found.cause


def test_collate_resize_storage_is_a_size_mismatch_in_disguise():
    found = top(COLLATE_IN_WORKER.format(message="Trying to resize storage that is not resizable"))
    assert found.pitfall.name == "collate-size-mismatch"


def test_model_cat_along_channels_is_not_collate():
    text = traceback(
        ("unet.py", "forward"),
        error="RuntimeError: Sizes of tensors must match except in dimension 1. "
        "Expected size 32 but got size 31 for tensor number 1 in the list.",
    )
    assert "collate-size-mismatch" not in [d.pitfall.name for d in ranked(text)]


def test_hand_written_random_crop():
    text = traceback(
        ("crop.py", "<module>"),
        ("crop.py", "random_crop"),
        ("/usr/lib/python3.11/random.py", "randint"),
        ("/usr/lib/python3.11/random.py", "randrange"),
        error="ValueError: empty range for randrange() (0, -30, -30)",
    )
    found = top(text)
    assert found.pitfall.name == "random-crop-too-large"
    assert found.confidence >= 0.9 and "31 pixels" in found.cause


def test_torchvision_crop_size_message():
    found = top(
        "ValueError: Required crop size (224, 224) is larger then input image size (200, 300)\n"
    )
    assert found.pitfall.name == "random-crop-too-large" and "(200, 300)" in found.cause


def test_bus_error_is_shared_memory():
    # github.com/facebookresearch/mmf/issues/441
    found = top(
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).\n"
    )
    assert found.pitfall.name == "dataloader-shm-exhausted"
    assert "--shm-size" in found.fix


@pytest.mark.parametrize(
    "said", ["I run with --ipc=host, so /dev/shm has 254GB.", "docker run --shm-size=128g ..."]
)
def test_bus_error_guess_is_silent_where_the_shared_memory_is_said_to_be_large(said):
    # github.com/pytorch/pytorch/issues/26009: the data volume, not /dev/shm
    bus_error = (
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).\n"
    )
    assert not ranked(said + "\n" + bus_error)
    # a message that says the device is full is no guess
    full = "RuntimeError: unable to write to file </torch_1_2>: No space left on device (28)\n"
    assert top(said + "\n" + full).pitfall.name == "dataloader-shm-exhausted"
    # a small size said is what the guess expects
    assert top("docker run --shm-size=8g ...\n" + bus_error).confidence > 0.9


def test_killed_worker_is_not_claimed_as_shared_memory():
    text = traceback(
        (f"{SITE}/torch/utils/data/dataloader.py", "_try_get_data"),
        error="RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed. ",
    )
    for diagnosis in ranked(text):
        if diagnosis.pitfall.name == "dataloader-shm-exhausted":
            assert diagnosis.confidence < 0.5 and "out-of-memory" in diagnosis.cause


@pytest.mark.parametrize(
    "message",
    [
        "RuntimeError: unable to open shared memory object </torch_5962_408180057> in read-write "
        "mode",  # github.com/pytorch/pytorch/issues/31701
        "RuntimeError: received 0 items of ancdata",  # github.com/ge-xing/Diff-UNet/issues/10
    ],
)
def test_shared_memory_open_failed(message):
    found = top(message + "\n")
    assert found.pitfall.name == "shared-memory-open-failed"
    assert "set_sharing_strategy('file_system')" in found.fix


def test_too_many_open_files_in_share_memory():
    text = traceback(
        ("convert.py", "main"),
        (f"{SITE}/torch/nn/modules/module.py", "share_memory"),
        (f"{SITE}/torch/storage.py", "share_memory_"),
        error="OSError: [Errno 24] Too many open files",
    )
    found = top(text)
    assert found.pitfall.name == "shared-memory-open-failed"
    assert found.confidence >= 0.8


SPAWN_PICKLE = f"""\
Traceback (most recent call last):
  File "/tmp/rep/spawn_lambda.py", line 9, in main
    for batch in loader:
  File "{SITE}/torch/utils/data/dataloader.py", line 1176, in __init__
    w.start()
  File "/usr/lib/python3.11/multiprocessing/popen_spawn_posix.py", line 47, in _launch
    reduction.dump(process_obj, fp)
  File "/usr/lib/python3.11/multiprocessing/reduction.py", line 60, in dump
    ForkingPickler(file, protocol).dump(obj)
AttributeError: Can't pickle local object 'main.<locals>.<lambda>'
"""


def test_lambda_sent_to_spawned_workers():
    found = top(SPAWN_PICKLE)
    assert found.pitfall.name == "dataloader-worker-pickle"
    assert "main.<locals>.<lambda>" in found.cause


def test_class_missing_in_a_spawned_worker():
    text = traceback(
        ("<string>", "<module>"),
        ("/usr/lib/python3.11/multiprocessing/spawn.py", "spawn_main"),
        ("/usr/lib/python3.11/multiprocessing/spawn.py", "_main"),
        error="AttributeError: Can't get attribute 'MyDataset' on <module '__main__' (built-in)>",
    )
    found = top(text)
    assert found.pitfall.name == "dataloader-worker-pickle" and "MyDataset" in found.cause


def test_class_missing_in_torch_load_is_not_a_worker_problem():
    text = traceback(
        ("predict.py", "<module>"),
        (f"{SITE}/torch/serialization.py", "load"),
        (f"{SITE}/torch/serialization.py", "find_class"),
        error="AttributeError: Can't get attribute 'Net' on "
        "<module '__main__' from '/tmp/rep/save_whole.py'>",
    )
    assert "dataloader-worker-pickle" not in [d.pitfall.name for d in ranked(text)]


def test_eof_in_spawned_child_points_at_the_pickle_error():
    text = SPAWN_PICKLE + traceback(
        ("<string>", "<module>"),
        ("C:\\Python38\\lib\\multiprocessing\\spawn.py", "spawn_main"),
        ("C:\\Python38\\lib\\multiprocessing\\spawn.py", "_main"),
        error="EOFError: Ran out of input",
    )
    assert top(text).pitfall.name == "dataloader-worker-pickle"


@pytest.mark.parametrize(
    "message, name, fragment",
    [
        (
            "AttributeError: '_SingleProcessDataLoaderIter' object has no attribute 'next'",
            "deprecated-iterator-next",
            "_SingleProcessDataLoaderIter",
        ),
        (
            "UserWarning: indexing with dtype torch.uint8 is now deprecated, please use a dtype "
            "torch.bool instead.",
            "uint8-mask",
            "uint8",
        ),
        (
            "RuntimeError: view size is not compatible with input tensor's size and stride (at least "
            "one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
            "non-contiguous-view",
            ".view()",
        ),
        (
            "ValueError: At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not currently supported. (You can probably work around this by "
            "making a copy of your array  with array.copy().) ",
            "numpy-negative-stride",
            "[::-1]",
        ),
        (
            "UserWarning: nn.functional.tanh is deprecated. Use torch.tanh instead.",
            "deprecated-functional-activation",
            "F.tanh",
        ),
        (
            "UserWarning: size_average and reduce args will be deprecated, please use "
            "reduction='sum' instead.",
            "deprecated-loss-reduction-args",
            "reduction='sum'",
        ),
        (  # the warning's first half, as an issue title quotes it
            "size_average and reduce args will be deprecated",
            "deprecated-loss-reduction-args",
            "size_average=False",
        ),
        (  # MSVC
            r"C:\src\ext\ext.cpp(1): fatal error C1083: Cannot open include file: "
            "'THC/THCDeviceUtils.cuh': No such file or directory",
            "cpp-extension-removed-api",
            "THC/THCDeviceUtils.cuh",
        ),
        (
            "ImportError: cannot import name 'container_abcs' from 'torch._six' "
            "(/opt/conda/lib/python3.8/site-packages/torch/_six.py)",
            "removed-torch-api",
            "`container_abcs` was removed from `torch._six` (Python 2 compatibility helpers) in "
            "PyTorch 1.9",
        ),
        (
            "AttributeError: module 'torch' has no attribute 'gels'",
            "removed-torch-api",
            "torch.linalg.lstsq",
        ),
    ],
)
def test_existing_entries_explain_their_errors(message, name, fragment):
    found = top(message + "\n")
    assert found.pitfall.name == name
    assert fragment in found.cause + found.fix


def test_onnx_resize_warning_and_unsupported_operator():
    # github.com/pytorch/pytorch/issues/22906 (torch 1.3.1)
    warning = (
        "/site-packages/torch/onnx/symbolic_helper.py:198: UserWarning: You are trying to "
        "export the model with onnx:Upsample for ONNX opset version 9. This operator "
        "might cause results to not match the expected results by PyTorch.\n"
    )
    assert top(warning).pitfall.name == "onnx-resize-opset"
    newer = (
        "torch.onnx.errors.UnsupportedOperatorError: Exporting the operator "
        "'aten::_upsample_bilinear2d_aa' to ONNX opset version 17 is not supported.\n"
    )
    assert "onnx-resize-opset" not in [d.pitfall.name for d in ranked(newer)]
