"""Ranking of the device, dtype and CUDA entries on short real messages (key fragments)."""

from __future__ import annotations

import pytest

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text


def traceback(message: str, *frames: tuple[str, str, str]) -> str:
    """A Python traceback ending in `message`; frames are (path, function, source line)."""
    lines = ["Traceback (most recent call last):"]
    for number, (path, function, source) in enumerate(frames, start=1):
        lines += [f'  File "{path}", line {number * 10}, in {function}', f"    {source}"]
    return "\n".join(lines + [message]) + "\n"


def ranked(text: str, lang: str = "en"):
    return diagnose(parse_text(text), lang, link=False).diagnoses


def top(text: str, lang: str = "en"):
    diagnoses = ranked(text, lang)
    assert diagnoses, "nothing recognised"
    return diagnoses[0]


def names(text: str) -> list[str]:
    return [d.pitfall.name for d in ranked(text)]


# cuda-out-of-memory: the numbers decide which cause comes first ----------------------------


def test_oom_reserved_much_larger_than_allocated_is_fragmentation():
    # torch 2.1 phrasing, from carolchenyx/MGFN./issues/35.
    text = traceback(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a "
        "total capacty of 6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is "
        "allocated by PyTorch, and 2.30 GiB is reserved by PyTorch but unallocated.",
        ("train.py", "<module>", "out = model(x)"),
    )
    diagnosis = top(text)
    assert diagnosis.pitfall.name == "cuda-out-of-memory"
    assert diagnosis.cause.startswith("The numbers point at fragmentation")
    assert "expandable_segments:True" in diagnosis.fix


def test_oom_with_little_memory_of_its_own_points_at_another_process():
    # torch 2.0 phrasing: 12 GiB of the GPU held by something else.
    text = traceback(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.69 GiB (GPU 0; "
        "14.56 GiB total capacity; 649.97 MiB already allocated; 1.31 GiB free; 1.01 GiB "
        "reserved in total by PyTorch)",
        ("run.py", "<module>", "mesh = model(image)"),
    )
    diagnosis = top(text)
    assert "another process" in diagnosis.cause
    assert "nvidia-smi" in diagnosis.fix


def test_oom_request_larger_than_the_gpu_is_an_input_too_big():
    text = traceback(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 55.57 GiB. GPU 0 has "
        "a total capacty of 12.00 GiB of which 9.02 GiB is free. Of the allocated memory 984.52 "
        "MiB is allocated by PyTorch, and 463.48 MiB is reserved by PyTorch but unallocated.",
        ("render.py", "<module>", "img = grid_sample(x, grid)"),
    )
    assert "larger than the whole GPU" in top(text).cause


def test_oom_full_of_own_tensors_names_batch_and_growth():
    text = traceback(
        "RuntimeError: CUDA out of memory. Tried to allocate 1024.00 MiB (GPU 0; 15.90 GiB total "
        "capacity; 14.25 GiB already allocated; 991.56 MiB free; 607.00 KiB cached)",
        ("train.py", "<module>", "yhat = model(X)"),
    )
    cause = top(text).cause
    assert cause.startswith("The numbers point at this program's own tensors")
    assert "torch.no_grad()" in cause and "total_loss += loss" in cause


def test_oom_without_numbers_ranks_the_usual_causes():
    text = traceback(
        "RuntimeError: cuda runtime error (2) : out of memory at "
        "/pytorch/aten/src/THC/generic/THCStorage.cu:58",
        ("main.py", "train", "loss.backward()"),
    )
    cause = top(text).cause
    assert cause.index("too big") < cause.index("no_grad") < cause.index("total_loss")
    assert cause.index("total_loss") < cause.index("nvidia-smi") < cause.index("fragmented")


def test_oom_in_an_evaluation_function_points_at_no_grad():
    text = traceback(
        "RuntimeError: CUDA error: out of memory",
        ("train.py", "main", "validate(val_loader, model)"),
        ("train.py", "validate", "scores_copy = scores.clone()"),
    )
    diagnosis = top(text)
    assert diagnosis.pitfall.name == "cuda-out-of-memory"
    assert "`validate`" in diagnosis.cause and "torch.no_grad()" in diagnosis.fix


# device-mismatch: which side was left behind ------------------------------------------------


def test_token_ids_left_on_cpu():
    text = traceback(
        "RuntimeError: Expected all tensors to be on the same device, but got index is on cpu, "
        "different from other tensors on cuda:0 (when checking argument in method "
        "wrapper_CUDA__index_select)",
        ("generate.py", "<module>", "out = model(input_ids)"),
    )
    diagnosis = top(text)
    assert diagnosis.pitfall.name == "device-mismatch"
    assert "token ids" in diagnosis.cause and "is on cpu" in diagnosis.cause
    assert "never moved" in diagnosis.cause


def test_embedding_left_on_cpu_means_the_model_was_not_moved():
    text = traceback(
        "RuntimeError: Expected all tensors to be on the same device, but found at least two "
        "devices, cpu and cuda:0! (when checking argument for argument index in method "
        "wrapper_CUDA__index_select)",
        ("generate.py", "<module>", "out = model(input_ids)"),
    )
    assert "the model, or part of it, stayed on the CPU" in top(text).cause


def test_conv_weight_on_cpu_is_a_device_mismatch_not_a_dtype_one():
    text = traceback(
        "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type "
        "(torch.FloatTensor) should be the same",
        ("train.py", "forward", "x = self.conv(x)"),
    )
    assert names(text) == ["device-mismatch"]
    assert "nn.ModuleList" in top(text).cause


def test_rnn_initial_hidden_state_on_cpu():
    text = traceback(
        "RuntimeError: Input and hidden tensors are not at the same device, found "
        "input tensor at cuda:0 and hidden tensor at cpu",
        ("model.py", "forward", "output, hidden = self.gru(x, hidden)"),
    )
    diagnosis = top(text)
    assert diagnosis.pitfall.name == "device-mismatch"
    assert "h0" in diagnosis.cause and "device=x.device" in diagnosis.fix


def test_old_backend_phrasing_in_chinese():
    text = traceback(
        "RuntimeError: Expected object of backend CUDA but got backend CPU for argument #2 'mat2'",
        ("train.py", "<module>", "out = model(data)"),
    )
    diagnosis = top(text, "zh")
    assert diagnosis.pitfall.name == "device-mismatch"
    assert "模型" in diagnosis.cause


# dtype-mismatch and float64-numpy-tensor ---------------------------------------------------


def test_half_input_into_float_model_suggests_autocast():
    text = traceback(
        "RuntimeError: mat1 and mat2 must have the same dtype, but got Half and Float",
        ("train.py", "<module>", "logits = model(x)"),
    )
    diagnosis = top(text)
    assert diagnosis.pitfall.name == "dtype-mismatch"
    assert "torch.autocast" in diagnosis.fix


def test_half_conv_input_is_a_dtype_mismatch_only():
    text = traceback(
        "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type "
        "(torch.cuda.FloatTensor) should be the same",
        ("train.py", "<module>", "out = net(images)"),
    )
    assert names(text) == ["dtype-mismatch"]


def test_bare_double_float_message_gives_the_general_answer_then_numpy():
    """Nothing in the bare message shows numpy data: the general answer (which names numpy
    first) comes first, the numpy one second (issue 14's calibration)."""
    text = "RuntimeError: expected scalar type Double but found Float\n"
    assert names(text)[:2] == ["dtype-mismatch", "float64-numpy-tensor"]


def test_double_from_numpy_in_the_traceback():
    text = traceback(
        "RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float",
        ("fit.py", "<module>", "pred = model(torch.from_numpy(X))"),
    )
    assert names(text)[:2] == ["float64-numpy-tensor", "dtype-mismatch"]


def test_double_in_an_elementwise_op_is_the_generic_mismatch():
    text = traceback(
        "RuntimeError: Expected object of scalar type Float but got scalar type "
        "Double for argument #2 'other'",
        ("utils.py", "bbox_iou", "mx = min(box1[0] - box1[2] / 2.0, box2[0])"),
    )
    assert names(text)[:2] == ["dtype-mismatch", "float64-numpy-tensor"]


def test_loss_target_in_double_blames_numpy_labels():
    text = traceback(
        "RuntimeError: Found dtype Double but expected Float",
        ("train.py", "<module>", "loss.backward()"),
    )
    diagnosis = top(text)
    assert diagnosis.pitfall.name == "float64-numpy-tensor"
    assert "target" in diagnosis.cause


def test_long_expected_is_left_to_the_loss_entry():
    text = traceback(
        "RuntimeError: expected scalar type Long but found Float",
        ("train.py", "<module>", "loss = criterion(out, labels)"),
    )
    dtype = next(d for d in ranked(text) if d.pitfall.name == "dtype-mismatch")
    assert dtype.confidence <= 0.5


def test_averaging_integer_tensors():
    text = traceback(
        "RuntimeError: result type Float can't be cast to the desired output type Long",
        ("average.py", "<module>", "avg[key] += state[key] / n"),
    )
    diagnosis = top(text)
    assert diagnosis.pitfall.name == "dtype-mismatch"
    assert "num_batches_tracked" in diagnosis.cause


# Index errors: specific entries above the generic ones -------------------------------------


def test_index_out_of_range_in_self_from_an_embedding():
    text = traceback(
        "IndexError: index out of range in self",
        ("model.py", "forward", "x = self.tok_emb(ids)"),
        (
            "/usr/lib/python3.11/site-packages/torch/nn/functional.py",
            "embedding",
            "return torch.embedding(weight, input, padding_idx, scale_grad_by_freq)",
        ),
    )
    assert names(text)[:2] == ["embedding-index-out-of-range", "index-out-of-range"]


def test_index_out_of_range_in_self_from_index_select():
    text = traceback(
        "IndexError: index out of range in self",
        ("graph.py", "<module>", "rows = torch.index_select(table, 0, idx)"),
    )
    assert names(text)[:2] == ["index-out-of-range", "embedding-index-out-of-range"]


def test_index_out_of_range_retold_next_to_a_vocabulary():
    # github.com/kongds/E5-V/issues/7: the message retold in prose, the ids against vocab_size.
    text = (
        'When I run the model, I have met "IndexError: index out of range". It seems that '
        "the image_token_index is larger than vocab_size.\n"
    )
    found = diagnose(parse_text(text), "en", link=False).diagnoses
    assert [d.pitfall.name for d in found][:1] == ["embedding-index-out-of-range"]
    assert found[0].confidence < 0.8  # retold, without a frame: a likely reading, not a sure one


def test_python_index_errors_next_to_tokens_are_not_embeddings():
    text = traceback(
        "IndexError: list index out of range",
        ("tokenize.py", "<module>", "first = tokens[0]"),
    )
    assert "embedding-index-out-of-range" not in names(text)


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            "../aten/src/ATen/native/cuda/Indexing.cu:1146: indexSelectLargeIndex: block: [18,0,0], "
            "thread: [5,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
            "embedding-index-out-of-range",
        ),
        (
            "../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [109,0,0], thread: "
            '[124,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` '
            "failed.",
            "index-out-of-range",
        ),
        (
            "/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:163: operator(): block: "
            '[0,0,0], thread: [98,0,0] Assertion `idx_dim >= 0 && idx_dim < index_size && "scatter '
            'gather kernel index out of bounds"` failed.',
            "index-out-of-range",
        ),
    ],
)
def test_kernel_assert_lines_outrank_the_generic_assert(line, expected):
    text = (
        line
        + "\n"
        + traceback(
            "RuntimeError: CUDA error: device-side assert triggered",
            ("train.py", "<module>", "print(loss.item())"),
        )
    )
    assert names(text)[:2] == [expected, "device-side-assert"]


def test_generic_device_side_assert_is_a_low_confidence_answer():
    text = (
        "RuntimeError: CUDA error: device-side assert triggered\nCUDA kernel errors might be "
        "asynchronously reported at some other API call,so the stacktrace below might be "
        "incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"
    )
    diagnosis = top(text)
    assert diagnosis.pitfall.name == "device-side-assert"
    assert 0.5 <= diagnosis.confidence <= 0.65
    assert "CUDA_LAUNCH_BLOCKING=1" in diagnosis.fix


def test_illegal_memory_access_outranks_the_async_note():
    text = (
        "RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel "
        "errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.\n"
    )
    assert names(text)[:2] == ["cuda-illegal-memory-access", "device-side-assert"]


def test_cudnn_not_supported_asks_for_contiguous_input():
    text = traceback(
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may "
        "appear if you passed in a non-contiguous input.",
        ("train.py", "<module>", "out = model(x)"),
    )
    diagnosis = top(text)
    assert diagnosis.pitfall.name == "cudnn-failure"
    assert ".contiguous()" in diagnosis.fix


def test_invalid_device_ordinal():
    text = traceback(
        "RuntimeError: CUDA error: invalid device ordinal",
        ("train.py", "<module>", "model = model.cuda(1)"),
    )
    assert top(text).pitfall.name == "invalid-device-ordinal"


# Tooling and distributed texts --------------------------------------------------------------


def test_notebook_and_local_rank_arguments_do_not_overlap():
    notebook = (
        "usage: ipykernel_launcher.py [-h] [--lr LR]\nipykernel_launcher.py: error: "
        "unrecognized arguments: -f /root/.local/share/jupyter/runtime/kernel-0ca855c3."
        "json\n"
    )
    launcher = "main.py: error: unrecognized arguments: --local-rank=0\n"
    assert names(notebook) == ["argparse-in-notebook"]
    assert names(launcher) == ["local-rank-argument"]


LAUNCH_WARNING = """\
/usr/lib/python3.10/site-packages/torch/distributed/launch.py:181: FutureWarning: The module \
torch.distributed.launch is deprecated
and will be removed in future. Use torchrun.
Note that --use-env is set by default in torchrun.
If your script expects `{option}` argument to be set, please
change it to read from `os.environ['LOCAL_RANK']` instead.

  warnings.warn(
usage: train.py [-h] [--lr LR] {usage}
"""


@pytest.mark.parametrize(
    "option, usage, expected",
    [
        ("--local-rank", "[--local_rank LOCAL_RANK]", ["local-rank-argument"]),
        # both spellings declared: the cut-off error is about something else
        ("--local-rank", "[--local_rank LOCAL_RANK] [--local-rank LOCAL_RANK]", []),
        # torch 1.x's launcher passes `--local_rank`, which the script declares
        ("--local_rank", "[--local_rank LOCAL_RANK]", []),
    ],
)
def test_usage_cut_before_its_error_after_the_launcher_warning(option, usage, expected):
    # github.com/microsoft/LoRA/issues/79: the paste stops after the usage line.
    text = LAUNCH_WARNING.format(option=option, usage=usage)
    assert names(text) == expected


def test_not_compiled_with_cuda_on_an_xpu_build_is_not_an_install_problem():
    # github.com/intel/torch-xpu-ops/issues/4127: a CUDA test ported to XPU still calls CUDA.
    text = traceback(
        "AssertionError: Torch not compiled with CUDA enabled",
        ("test/xpu/test_matmul_xpu.py", "test_scaled_mm", "torch.cuda.get_device_properties(0)"),
        ("/usr/lib/python3.11/site-packages/torch/cuda/__init__.py", "_lazy_init", "raise"),
    )
    found = diagnose(parse_text(text), "en", link=False).diagnoses
    assert found[0].pitfall.name == "cpu-only-torch-build"
    assert found[0].confidence < 0.8 and "xpu" in found[0].fix + found[0].cause
    plain = text.replace("test/xpu/test_matmul_xpu.py", "train.py")
    assert diagnose(parse_text(plain), "en", link=False).diagnoses[0].confidence >= 0.9


def test_numpy_of_a_cuda_tensor():
    text = traceback(
        "TypeError: can't convert cuda:0 device type tensor to numpy. Use "
        "Tensor.cpu() to copy the tensor to host memory first.",
        ("plot.py", "<module>", "plt.plot(pred)"),
    )
    assert top(text).pitfall.name == "numpy-on-grad-or-cuda-tensor"


def test_dataparallel_attribute():
    text = traceback(
        "AttributeError: 'DataParallel' object has no attribute 'predict'",
        ("eval.py", "<module>", "labels = model.predict(x)"),
    )
    diagnosis = top(text)
    assert diagnosis.pitfall.name == "dataparallel-attribute"
    assert "`.module.predict`" in diagnosis.fix


def test_cuda_in_a_forked_worker():
    text = traceback(
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA "
        "with multiprocessing, you must use the 'spawn' start method",
        ("dataset.py", "__getitem__", "return x.cuda()"),
    )
    assert top(text).pitfall.name == "cuda-init-before-fork"
