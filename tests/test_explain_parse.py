"""explain/parse.py: errors read out of tracebacks, whole logs and live exceptions.

Fixtures in fixtures/explain_parse/ are raw inputs. Where one follows the format of a real
report, its test names the report (paths, shapes and names changed).
"""

from __future__ import annotations

import builtins
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES

from torchdoctor.explain.model import Frame
from torchdoctor.explain.parse import from_exception, parse_text, user_frame, user_frame_of

DIR = FIXTURES / "explain_parse"


def parse(name: str):
    return parse_text((DIR / name).read_text(encoding="utf-8"))


def summary(report) -> list[tuple]:
    return [(b.kind, b.type, b.relation) for b in report.blocks]


# --- 1. plain tracebacks ---------------------------------------------------------------------


def test_empty_and_whitespace_inputs_have_no_blocks():
    for text in ("", "   \n\n\t  \n", "epoch 1 loss 0.3\nepoch 2 loss 0.2\n"):
        report = parse_text(text)
        assert report.blocks == []
        assert report.final is None


def test_multi_line_message_runs_to_the_blank_line():
    report = parse("plain_state_dict.txt")
    assert summary(report) == [("exception", "RuntimeError", None)]
    final = report.final
    assert final.message.splitlines() == [
        "Error(s) in loading state_dict for Net:",
        '\tMissing key(s) in state_dict: "fc.weight", "fc.bias".',
        '\tUnexpected key(s) in state_dict: "module.fc.weight", "module.fc.bias".',
        "\tsize mismatch for conv1.weight: copying a param with shape torch.Size([6, 3, 5, 5]) "
        "from checkpoint, the shape in current model is torch.Size([6, 1, 5, 5]).",
    ]
    assert final.frames[0] == Frame(
        "/home/li/proj/train.py", 42, "<module>", 'model.load_state_dict(checkpoint["model"])'
    )
    assert final.line == 9
    assert user_frame_of(report) == final.frames[0]


def test_qualified_exception_types_and_311_position_markers():
    report = parse("py311_linalg.txt")
    final = report.final
    assert final.type == "torch._C._LinAlgError"
    assert final.short_type == "_LinAlgError"
    assert final.message.startswith("linalg.inv: The diagonal element 2 is zero")
    assert final.frames == (
        Frame("/home/li/proj/solve.py", 9, "<module>", "x = torch.linalg.inv(A) @ b"),
    )

    report = parse("oom_qualified.txt")
    assert report.final.type == "torch.OutOfMemoryError"
    assert report.final.message.startswith("CUDA out of memory. Tried to allocate 1.50 GiB.")
    sources = [f.source for f in report.final.frames]
    assert sources == [
        "out = model(images)",
        "return self._call_impl(*args, **kwargs)",
        "return F.conv2d(",
    ]
    assert not any("^" in s or "~" in s for s in sources)


def test_traceback_cut_above_its_last_source_line_keeps_that_line():
    """A log that kept only the failing line and 3.11's markers under it: the line is the
    frame's source (of an unknown, non-user file), so causes that read it still can."""
    text = (
        "    if node_data['sigma_start'] >= timesteps >= node_data['sigma_end']:\n"
        "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "RuntimeError: Boolean value of Tensor with more than one value is ambiguous\n"
    )
    [frame] = parse_text(text).final.frames
    assert frame.source == "if node_data['sigma_start'] >= timesteps >= node_data['sigma_end']:"
    assert user_frame([frame]) is None  # no file to link or to show as the user's
    # without the markers, or with its `File` line above, it is not a cut frame
    assert parse_text(text.replace("^", "")).final.frames == ()
    whole = '  File "app.py", line 3, in f\n' + text
    assert parse_text(whole).final.frames == (
        Frame(
            "app.py", 3, "f", "if node_data['sigma_start'] >= timesteps >= node_data['sigma_end']:"
        ),
    )


def test_bare_exception_without_message():
    report = parse("keyboard_interrupt.txt")
    assert summary(report) == [("exception", "KeyboardInterrupt", None)]
    assert report.final.message == ""
    assert user_frame_of(report).path == "train.py"


# --- 2. chains and groups --------------------------------------------------------------------


def test_chained_exceptions_carry_their_relation_on_the_later_block():
    report = parse("chained_unpickling.txt")
    assert summary(report) == [
        ("exception", "_pickle.UnpicklingError", None),
        ("exception", "RuntimeError", "cause"),
        ("exception", "NameError", "context"),
    ]
    first = report.blocks[0]
    assert first.message.startswith("Weights only load failed.")
    assert first.message.endswith(
        "GLOBAL numpy.core.multiarray.scalar was not an allowed global by default."
    )
    assert len(first.message.splitlines()) == 4
    assert report.final.message == "name 'report' is not defined"


def test_exception_group_comes_after_its_sub_exceptions():
    report = parse("exception_group.txt")
    assert summary(report) == [
        ("exception", "FileNotFoundError", "group"),
        ("exception", "ValueError", "group"),
        ("exception", "ExceptionGroup", None),
    ]
    assert report.final.message == "unhandled errors in a TaskGroup (2 sub-exceptions)"
    assert [f.line for f in report.final.frames] == [21, 190, 17]
    assert report.blocks[0].frames[0].source == 'return torch.load(path, map_location="cpu")'


# --- 3. DataLoader workers, DataParallel replicas --------------------------------------------


def test_dataloader_worker_original_traceback_is_its_own_block():
    # Format as in Suanmd/TR-MISR#7 and jiuntian/interactdiffusion#14.
    report = parse("dataloader_worker.txt")
    assert summary(report) == [
        ("exception", "RuntimeError", "worker"),
        ("exception", "RuntimeError", None),
    ]
    worker, outer = report.blocks
    assert outer.message == "Caught RuntimeError in DataLoader worker process 0."
    assert worker.message.startswith("stack expects each tensor to be equal size, but got")
    assert worker.frames[-1] == Frame(
        "/home/ubuntu/seg/data/collate.py",
        31,
        "collate",
        "images = torch.stack([b[0] for b in batch])",
    )
    assert len(outer.frames) == 5
    assert user_frame(worker.frames).path == "/home/ubuntu/seg/data/collate.py"
    assert user_frame_of(report).path == "/home/ubuntu/seg/train.py"  # the final's first


def test_dataloader_worker_traceback_holding_a_chain():
    report = parse("dataloader_worker_chained.txt")
    assert summary(report) == [
        ("exception", "KeyError", None),
        ("exception", "KeyError", "worker"),
        ("exception", "KeyError", None),
    ]
    worker, outer = report.blocks[1:]
    assert outer.message == "Caught KeyError in DataLoader worker process 0."  # not wandb's
    assert user_frame(worker.frames) == Frame(
        "/home/li/tab/dataset.py", 22, "__getitem__", 'y = self.df.loc[i, "label"]'
    )
    assert user_frame_of(report).path == "/home/li/tab/train.py"


def test_dataparallel_replica_original_traceback():
    report = parse("dataparallel_replica.txt")
    assert summary(report) == [
        ("exception", "StopIteration", "worker"),
        ("exception", "StopIteration", None),
    ]
    assert report.final.message == "Caught StopIteration in replica 0 on device 0."
    assert report.blocks[0].message == ""
    assert user_frame(report.blocks[0].frames).path == "/home/kim/bert/model.py"


def test_user_frame_of_falls_back_to_the_worker():
    text = (
        (DIR / "dataloader_worker.txt")
        .read_text()
        .replace("/home/ubuntu/seg/train.py", "/usr/lib/python3/dist-packages/lightning/loop.py")
    )
    report = parse_text(text)
    assert user_frame_of(report).path == "/home/ubuntu/seg/data/collate.py"


# --- 4. multi-process logs -------------------------------------------------------------------


def test_interleaved_rank_tracebacks_are_kept_apart():
    # Launcher lines as in OEvortex/unsloth#4, lmzpai/roboMamba#10.
    report = parse("torchrun_interleaved.txt")
    by_rank = {b.rank: b for b in report.exceptions if b.rank is not None}
    assert by_rank[0].type == "torch.OutOfMemoryError"
    assert [f.line for f in by_rank[0].frames] == [58, 47, 1736]
    assert by_rank[1].type == "RuntimeError"
    assert by_rank[1].message.startswith("Expected to have finished reduction")
    assert [f.line for f in by_rank[1].frames] == [58, 51, 581]
    assert report.final.type.endswith("ChildFailedError")
    assert report.final.rank is None
    assert "Root Cause (first observed failure):" in report.final.message
    # torchrun's `*****` banner is not an error; the rank's C++ warning and `failed` line are.
    logs = [b for b in report.blocks if b.kind == "log"]
    assert [(b.rank, b.frames[0].line) for b in logs] == [(None, 793), (1, 4115), (None, 869)]
    assert logs[2].message.startswith("failed (exitcode: 1) local_rank: 0")
    assert "[rank0]" not in report.text and "[rank1]" not in report.text
    # The launcher's frames are torch's; the user's are in the ranks' tracebacks.
    assert user_frame_of(report).path == "/workspace/ddp_train.py"


def test_default_prefix_and_rank_c10_warning():
    report = parse("default_prefix.txt")
    assert summary(report) == [("exception", "RuntimeError", None), ("log", "", None)]
    exception, warning = report.blocks
    assert exception.rank == 0 and warning.rank == 1
    assert exception.frames[0] == Frame(
        "pretrain.py", 33, "<module>", 'dist.init_process_group("nccl")'
    )
    assert warning.frames == (Frame("socket.cpp", 601),)  # the repeated line, once
    assert warning.message.startswith("[c10d] The client socket has failed to connect")


# --- 5. SyntaxError --------------------------------------------------------------------------


def test_syntax_error_without_traceback_header():
    report = parse("syntax_error.txt")
    assert summary(report) == [("exception", "SyntaxError", None)]
    assert report.final.message == "'(' was never closed"
    assert report.final.frames == (
        Frame("/home/li/proj/model.py", 14, None, "def forward(self, x:"),
    )


def test_indentation_error_raised_by_an_import():
    report = parse("indentation_error.txt")
    final = report.final
    assert final.type == "IndentationError"
    assert final.frames[-1] == Frame("/home/li/proj/model.py", 9, None, "return self.fc(x)")
    assert user_frame_of(report) == final.frames[-1]


# --- 6. CUDA --------------------------------------------------------------------------------


def test_device_side_asserts_are_one_block_each_and_async_notes_stay_in_the_message():
    # Format as in modelscope/ms-swift#3267.
    report = parse("device_assert.txt")
    logs = [b for b in report.blocks if b.kind == "log"]
    assert len(logs) == 2  # 96 + 8 thread lines, two distinct assertions
    assert logs[0].type == ""
    assert logs[0].message == (
        "nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], "
        "thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed."
    )
    assert logs[0].frames == (Frame("../aten/src/ATen/native/cuda/Loss.cu", 250),)
    assert logs[1].frames == (Frame("../aten/src/ATen/native/cuda/IndexKernel.cu", 92),)
    final = report.final
    assert final.message.splitlines() == [
        "CUDA error: device-side assert triggered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    ]
    assert user_frame_of(report).path == "/root/nlp/finetune.py"


def test_windows_device_assert_without_kernel_name():
    # Format as in lorenmt/mtan#62.
    line = (
        r"C:\actions-runner\_work\pytorch\pytorch\builder\windows\pytorch\aten\src\ATen"
        r"\native\cuda\NLLLoss2d.cu:103: block: [0,0,0], thread: [{}, 0,0] Assertion "
        "`t >= 0 && t < n_classes` failed."
    )
    report = parse_text("\n".join(line.format(t) for t in range(300)))
    assert len(report.blocks) == 1
    assert report.blocks[0].frames[0].line == 103
    assert report.blocks[0].message.startswith("block: [0,0,0], thread: [0, 0,0] Assertion")


# --- 7. C++ extension builds -----------------------------------------------------------------


def test_compiler_errors_and_the_final_build_error():
    report = parse("cpp_extension_build.txt")
    compiler = [b for b in report.blocks if b.type == "CompilerError"]
    assert [(b.kind, b.frames[0].path, b.frames[0].line, b.message) for b in compiler] == [
        ("log", "/home/li/proj/csrc/roi_ext.cpp", 3, "THC/THC.h: No such file or directory"),
        (
            "log",
            "/home/li/proj/csrc/roi_ext.cpp",
            12,
            "'AT_CHECK' was not declared in this scope; did you mean 'TORCH_CHECK'?",
        ),
        ("log", "/home/li/proj/csrc/roi_kernel.cu", 34, 'identifier "THCudaCheck" is undefined'),
    ]
    assert [(b.type, b.relation) for b in report.exceptions] == [
        ("subprocess.CalledProcessError", None),
        ("RuntimeError", "cause"),
    ]
    assert report.final.message == "Error building extension 'roi_ext'"


def test_msvc_compiler_error():
    text = (
        r"C:\src\ext\ext.cpp(12): error C2065: 'AT_CHECK': undeclared identifier" + "\n"
        r"C:\src\ext\ext.cpp(1): fatal error C1083: Cannot open include file: 'THC/THC.h'"
    )
    report = parse_text(text)
    assert [(b.type, b.frames[0].path, b.frames[0].line) for b in report.blocks] == [
        ("CompilerError", r"C:\src\ext\ext.cpp", 12),
        ("CompilerError", r"C:\src\ext\ext.cpp", 1),
    ]


# --- 8. warnings ----------------------------------------------------------------------------


def test_warnings_with_their_source_lines():
    # DataLoader worker-count warning as in bshall/hubert#3.
    report = parse("warnings.txt")
    assert [(b.kind, b.type) for b in report.blocks] == [
        ("warning", "UserWarning"),
        ("warning", "UserWarning"),
        ("warning", "FutureWarning"),
        ("warning", "DeprecationWarning"),
        ("log", ""),
    ]  # the repeated warning, once
    first = report.blocks[0]
    assert first.frames == (
        Frame("/home/li/proj/train.py", 37, None, "loss = F.mse_loss(pred, target)"),
    )
    assert first.message.startswith("Using a target size (torch.Size([16, 1])) that is different")
    assert report.blocks[1].frames[0].path.endswith("/torch/utils/data/dataloader.py")
    assert report.blocks[3].frames[0].source is None
    assert report.blocks[4].frames == (Frame("socket.cpp", 663),)
    assert report.final is None
    assert user_frame_of(report).line == 52  # the last warning in the user's code


def test_warning_pasted_without_its_location():
    report = parse_text(
        "UserWarning: Detected call of `lr_scheduler.step()` before `optimizer.step()`. \n"
        "In PyTorch 1.1.0 and later, \n"
        "Is this warning OK?\n"
    )
    [block] = report.blocks
    assert (block.kind, block.type, block.frames) == ("warning", "UserWarning", ())
    assert block.message.startswith("Detected call of `lr_scheduler.step()`")
    # A sentence that merely names a warning class is not a warning.
    assert parse_text("I get a UserWarning: it says nothing\n").blocks == []


# --- 9. other log errors ---------------------------------------------------------------------


def test_crashes_and_cpp_terminate():
    report = parse("crash_logs.txt")
    assert all(b.kind == "log" and b.type == "" for b in report.blocks)
    assert [b.message.splitlines()[0] for b in report.blocks] == [
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).",
        "Bus error (core dumped)",
        "CUDA error: an illegal memory access was encountered",
        "Aborted (core dumped)",
        "Segmentation fault (core dumped)",
        "./run.sh: line 4: 48213 Killed                  python train.py --bs 512",
    ]
    what = report.blocks[2].message
    assert what.splitlines()[-1] == (
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
    )
    assert "frame #0" not in what


def test_c10_stack_ends_a_message_without_blank_line():
    text = (
        "terminate called after throwing an instance of 'c10::CUDAError'\n"
        "  what():  CUDA error: device-side assert triggered\n"
        "Exception raised from createEvent at /pytorch/aten/src/ATen/cuda/CUDAEvent.h:174 "
        "(most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x42\n"
    )
    report = parse_text(text)
    assert [b.message for b in report.blocks] == ["CUDA error: device-side assert triggered"]


def test_faulthandler_frames_belong_to_the_fatal_error():
    text = (
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f3c5a2b8740 (most recent call first):\n"
        '  File "/home/li/ext/test_ext.py", line 12 in run\n'
        '  File "/home/li/ext/test_ext.py", line 20 in <module>\n'
        "Segmentation fault (core dumped)\n"
    )
    report = parse_text(text)
    fatal, crash = report.blocks
    assert fatal.message == "Fatal Python error: Segmentation fault"
    assert [(f.line, f.function) for f in fatal.frames] == [(20, "<module>"), (12, "run")]
    assert crash.message == "Segmentation fault (core dumped)"
    assert user_frame_of(report).line == 12


def test_exception_ignored_is_marked():
    text = (
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f2b>\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1478, '
        "in __del__\n"
        "    self._shutdown_workers()\n"
        "AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_workers'\n"
    )
    assert summary(parse_text(text)) == [("exception", "AttributeError", "ignored")]


# --- 10. noise ------------------------------------------------------------------------------


def test_ansi_colours_and_progress_bars_are_cleaned():
    text = (
        "\x1b[32mEpoch 1\x1b[0m:   0%|          | 0/10 [00:00<?, ?it/s]"
        "\rEpoch 1:  50%|#####     | 5/10 [00:01<00:01, 4.9it/s]\r"
        "Epoch 1:  60%|######    | 6/10 [00:01<00:00, 5.0it/s]\n"
        "\x1b[31mTraceback (most recent call last):\x1b[0m\n"
        '  File "\x1b[35m/home/li/train.py\x1b[0m", line \x1b[35m12\x1b[0m, in '
        "\x1b[35m<module>\x1b[0m\n"
        "    \x1b[31mloss.backward\x1b[0m\x1b[1;31m()\x1b[0m\n"
        "\x1b[1;35mRuntimeError\x1b[0m: \x1b[35melement 0 of tensors does not require grad "
        "and does not have a grad_fn\x1b[0m\n"
    )
    report = parse_text(text)
    assert report.text.splitlines()[0] == "Epoch 1:  60%|######    | 6/10 [00:01<00:00, 5.0it/s]"
    assert "\x1b" not in report.text and "\r" not in report.text
    assert report.final.type == "RuntimeError"
    assert report.final.message.startswith("element 0 of tensors does not require grad")
    assert report.final.frames == (Frame("/home/li/train.py", 12, "<module>", "loss.backward()"),)


def test_logging_prefixes():
    report = parse("logging_prefixes.txt")
    assert [(b.type, b.message) for b in report.blocks] == [
        ("RuntimeError", "expected scalar type Long but found Float"),  # not the INFO line
        ("ValueError", "too many values to unpack (expected 2)"),
    ]
    assert report.blocks[0].frames[0].path == "/srv/app/trainer.py"


def test_timestamp_on_every_line_keeps_the_indentation():
    lines = [
        "Traceback (most recent call last):",
        '  File "/app/x.py", line 3, in <module>',
        "    import torch_scatter",
        "ModuleNotFoundError: No module named 'torch_scatter'",
    ]
    text = "\n".join(f"2024-05-01T10:00:0{k}.123456Z {line}" for k, line in enumerate(lines))
    report = parse_text(text)
    assert report.final.type == "ModuleNotFoundError"
    assert report.final.frames == (Frame("/app/x.py", 3, "<module>", "import torch_scatter"),)


def test_pytest_e_lines():
    report = parse("pytest_output.txt")
    assert [(b.type, b.line) for b in report.blocks] == [("RuntimeError", 10)]
    assert report.final.message.startswith("Given groups=1, weight of size [16, 1, 3, 3]")
    # pytest prints locations, not `File "..."` lines: they are the exception's frames.
    assert [(f.path, f.line) for f in report.final.frames] == [
        ("tests/test_model.py", 14),
        (".venv/lib/python3.12/site-packages/torch/nn/modules/conv.py", 549),
    ]
    assert user_frame_of(report) == Frame(
        "tests/test_model.py", 14, None, "out = model(torch.randn(2, 3, 32, 32))"
    )


def test_pytest_short_tracebacks():
    report = parse("pytest_short.txt")
    assert [b.type for b in report.blocks] == ["RuntimeError"]
    assert [f.function for f in report.final.frames] == [
        "test_train_step",
        "_wrapped_call_impl",
        "forward",
    ]
    assert user_frame_of(report) == Frame(
        "tests/test_train.py", 22, "test_train_step", "loss = criterion(model(x), y)"
    )


def test_windows_paths():
    report = parse("windows_paths.txt")
    final = report.final
    assert final.type == "AttributeError"
    assert final.frames[0].path == r"C:\Users\me\Desktop\proj\train.py"
    assert user_frame_of(report) == Frame(
        r"C:\Users\me\Desktop\proj\train.py", 88, "main", "for batch in loader:"
    )


def test_ipython_8_traceback():
    report = parse("jupyter_ipython8.txt")
    final = report.final
    assert (final.type, final.message) == (
        "RuntimeError",
        "mat1 and mat2 shapes cannot be multiplied (4x10 and 20x5)",
    )
    assert [(f.path, f.line, f.function, f.source) for f in final.frames] == [
        ("Cell In[7]", 5, None, "y = model(x)"),
        (
            "~/miniconda3/envs/dl/lib/python3.10/site-packages/torch/nn/modules/module.py",
            1518,
            "Module._wrapped_call_impl",
            "return self._call_impl(*args, **kwargs)",
        ),
        ("~/proj/helpers.py", 37, "run_model", "return model(x)"),
        (
            "~/miniconda3/envs/dl/lib/python3.10/site-packages/torch/nn/modules/linear.py",
            114,
            "Linear.forward",
            "return F.linear(input, self.weight, self.bias)",
        ),
    ]
    assert user_frame_of(report).path == "~/proj/helpers.py"


def test_ipython_7_traceback():
    report = parse("jupyter_ipython7.txt")
    final = report.final
    assert final.message.startswith("Expected object of type torch.cuda.FloatTensor")
    assert [(f.path, f.line, f.function) for f in final.frames] == [
        ("<ipython-input-3-5b2a8f1c4d7e>", 4, "<module>"),
        ("/usr/local/lib/python3.6/dist-packages/torch/nn/modules/module.py", 489, "__call__"),
        ("/usr/local/lib/python3.6/dist-packages/torch/nn/functional.py", 1352, "linear"),
    ]
    assert user_frame_of(report).path == "<ipython-input-3-5b2a8f1c4d7e>"


def test_python2_era_thc_errors():
    report = parse("python2_thc.txt")
    thc, final = report.blocks
    assert (thc.kind, thc.type) == ("log", "")
    assert thc.frames == (Frame("/pytorch/aten/src/THC/generic/THCStorage.cu", 58),)
    assert final.message == (
        "cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/generic/THCStorage.cu:58"
    )
    assert report.python_version == "2.7"


def test_indented_fenced_and_quoted_pastes():
    report = parse("markdown_indented.txt")
    assert [(b.type, b.message) for b in report.blocks] == [
        ("ValueError", "Expected input batch_size (64) to match target batch_size (32)."),
        ("AssertionError", "Torch not compiled with CUDA enabled"),
    ]
    assert report.blocks[0].frames[0] == Frame(
        "main.py", 20, "<module>", "loss = criterion(logits, labels)"
    )
    assert report.final.frames == (Frame("eval.py", 8, "<module>", "model.cuda()"),)


@pytest.mark.parametrize(
    "text, expected",
    [
        # Inline code and quotes around pasted lines (format of pytorch/pytorch#18668, #2971).
        (
            "``RuntimeError: Error(s) in loading state_dict for Inception3:``\n"
            '``Unexpected key(s) in state_dict: "AuxLogits.fc.weight".``',
            (
                "RuntimeError",
                "Error(s) in loading state_dict for Inception3:\n"
                'Unexpected key(s) in state_dict: "AuxLogits.fc.weight".',
            ),
        ),
        (
            "```RuntimeError: Cannot re-initialize CUDA in forked subprocess.```",
            ("RuntimeError", "Cannot re-initialize CUDA in forked subprocess."),
        ),
        (
            "\u201cRuntimeError: CUDA error: an illegal memory access was encountered   \u201d",
            ("RuntimeError", "CUDA error: an illegal memory access was encountered"),
        ),
        # After other text (format of ZhaoJ9014/face.evoLVe#58, aks2203/deep-thinking#5).
        (
            "temp_x = x.cuda(self.device_id[i]) RuntimeError: CUDA error (10): invalid device ordinal",
            ("RuntimeError", "CUDA error (10): invalid device ordinal"),
        ),
        (
            "actual error: torch.cuda.OutOfMemoryError: CUDA out of memory.",
            ("torch.cuda.OutOfMemoryError", "CUDA out of memory."),
        ),
    ],
)
def test_error_lines_pasted_in_issues(text, expected):
    report = parse_text(text)
    assert (report.final.type, report.final.message) == expected


def test_srun_and_ray_process_prefixes():
    text = (
        "15: terminate called after throwing an instance of 'c10::CUDAError'\n"
        " 3: RuntimeError: NCCL communicator was aborted on rank 3.\n"
        "15:   what():  CUDA error: device-side assert triggered\n"
        "(RayTrainWorker pid=112196) ../aten/src/ATen/native/cuda/Indexing.cu:1422: "
        "indexSelectLargeIndex: block: [15,0,0], thread: [96,0,0] Assertion "
        "`srcIndex < srcSelectDimSize` failed.\n"
    )
    report = parse_text(text)
    assert [(b.rank, b.kind, b.message.splitlines()[0][:24]) for b in report.blocks] == [
        (3, "exception", "NCCL communicator was ab"),
        (15, "log", "CUDA error: device-side "),
        (None, "log", "indexSelectLargeIndex: b"),
    ]
    assert report.text.splitlines()[3].startswith("../aten/src/ATen/native/cuda/Indexing.cu")


def test_fatal_error_without_path_and_argparse_usage_error():
    # Formats of Mukosame/Zooming-Slow-Mo-CVPR-2020#74 and skycrapers/TecoGAN-PyTorch#31.
    text = (
        " fatal error: THC/THC.h: No such file or directory\n"
        "main.py: error: unrecognized arguments: --local-rank=0\n"
    )
    report = parse_text(text)
    assert [(b.kind, b.type, b.message, b.frames) for b in report.blocks] == [
        ("log", "CompilerError", "THC/THC.h: No such file or directory", ()),
        ("log", "", "main.py: error: unrecognized arguments: --local-rank=0", ()),
    ]


def test_error_line_without_traceback():
    report = parse("only_error_line.txt")
    assert summary(report) == [("exception", "RuntimeError", None)]
    assert report.final.message.startswith("CUDA out of memory. Tried to allocate 20.00 MiB")
    assert report.final.frames == ()
    assert user_frame_of(report) is None


# --- 11, 12. versions, cleaned text ----------------------------------------------------------


def test_versions_from_collect_env():
    report = parse("collect_env.txt")
    assert (report.torch_version, report.python_version) == ("2.0.1+cu117", "3.10.12")
    assert report.final.type == "RuntimeError"


@pytest.mark.parametrize(
    "text, torch_version, python_version",
    [
        ("torch 2.1.0\nnumpy 1.26.0", "2.1.0", None),
        ("Successfully installed torch-2.2.0.dev20231010+cu121", "2.2.0.dev20231010+cu121", None),
        ("torchvision==0.15.2\n", None, None),
        (
            '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/functional.py", line 1',
            None,
            "3.10",
        ),
        (r'  File "C:\Python311\Lib\site-packages\x.py", line 1', None, "3.11"),
    ],
)
def test_versions_best_effort(text, torch_version, python_version):
    report = parse_text(text)
    assert (report.torch_version, report.python_version) == (torch_version, python_version)


def test_text_is_the_cleaned_input():
    report = parse_text("[rank0]: \x1b[31mRuntimeError\x1b[0m: boom\n[rank1]:ok\r\n")
    assert report.text == "RuntimeError: boom\nok\n"
    assert report.final.rank == 0


# --- robustness ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Traceback (most recent call last):",
        "Traceback (most recent call last):\n  File",
        'Traceback (most recent call last):\n  File "x.py", line 1, in f\n',
        "  + Exception Group Traceback (most recent call last):\n  | \n  +-+---\n    | ",
        "RuntimeError: Caught RuntimeError in DataLoader worker process 0.\n"
        "Original Traceback (most recent call last):\n",
        "terminate called after throwing an instance of 'c10::Error'\n  what():",
        "-" * 75 + "\nRuntimeError    Traceback (most recent call last)\n----> 5",
        "\x00\x1b[\r\r\r\n\x1b]8;;\n" * 3,
        "[rank99999999999999999999]: E" + " " * 5000,
        "a:" * 5000 + "Warning: " + "x.py:1: " * 1000,
    ],
)
def test_never_raises_on_broken_input(text):
    report = parse_text(text)
    assert isinstance(report.blocks, list)


def test_truncated_traceback_gives_no_false_exception():
    text = 'Traceback (most recent call last):\n  File "x.py", line 1, in f\n    g()\nepoch 3\n'
    assert parse_text(text).blocks == []


def test_ten_thousand_line_log_parses_fast():
    names = (
        "torchrun_interleaved.txt",
        "warnings.txt",
        "device_assert.txt",
        "jupyter_ipython8.txt",
        "crash_logs.txt",
        "cpp_extension_build.txt",
    )
    unit = [(DIR / name).read_text() for name in names]
    lines = "\n".join(unit + ["step 1 loss 0.5 lr 0.001"] * 200).splitlines()

    def log(size: int) -> str:
        return "\n".join((lines * (size // len(lines) + 1))[:size])

    # Linear, not a fixed time (a shared machine makes absolute times flaky): twice the log
    # takes about twice the time (a quadratic parser would take four times).
    half, whole = (min(_timed(parse_text, log(n)) for _ in range(3)) for n in (5_000, 10_000))
    assert whole < 3 * half + 0.01, f"{half * 1000:.0f} ms -> {whole * 1000:.0f} ms"
    assert whole < 0.5, f"{whole * 1000:.0f} ms"


def _timed(function, *args) -> float:
    """CPU seconds: wall time swings with whatever else shares the machine."""
    start = time.process_time()
    function(*args)
    return time.process_time() - start


def test_parse_does_not_import_torch():
    probe = (
        "import sys\nfrom torchdoctor.explain.parse import parse_text\n"
        "parse_text('RuntimeError: x')\nassert 'torch' not in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# --- user frames -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, is_user",
    [
        ("/home/li/proj/train.py", True),
        ("train.py", True),
        (r"C:\Users\me\proj\train.py", True),
        ("<ipython-input-3-5b2a8f1c4d7e>", True),
        ("/tmp/ipykernel_123/456.py", True),
        ("Cell In[3]", True),
        ("/opt/conda/lib/python3.10/site-packages/timm/models/vit.py", False),
        ("/usr/lib/python3/dist-packages/numpy/core/fromnumeric.py", False),
        ("/usr/lib/python3.10/multiprocessing/process.py", False),
        ("/Users/me/.pyenv/versions/3.11.4/lib/python3.11/runpy.py", False),
        ("<frozen runpy>", False),
        (r"C:\Python310\Lib\threading.py", False),
        (r"C:\Users\me\anaconda3\lib\runpy.py", False),
        ("/home/li/pytorch/torch/nn/modules/module.py", False),  # a source checkout of torch
        ("/opt/conda/bin/torchrun", False),
        ("<__array_function__ internals>", False),
    ],
)
def test_user_frame_classifies_paths(path, is_user):
    frame = Frame(path, 1)
    assert (user_frame([frame]) == frame) is is_user


def test_user_frame_takes_the_last_user_frame_and_string_only_as_last_resort():
    user, lib = Frame("/p/a.py", 1), Frame("/usr/lib/python3.9/site-packages/torch/x.py", 2)
    assert user_frame([user, Frame("/p/b.py", 5), lib]) == Frame("/p/b.py", 5)
    assert user_frame([Frame("<string>", 1), lib]) == Frame("<string>", 1)
    assert user_frame([Frame("<string>", 1), user, lib]) == user
    assert user_frame([lib]) is None
    assert user_frame([]) is None


# --- live exceptions -------------------------------------------------------------------------


def _raise_chain():
    try:
        try:
            {}["weights"]
        except KeyError as err:
            raise RuntimeError("cannot load") from err
    except RuntimeError:
        raise ValueError("giving up")


def test_from_exception_walks_the_chain_like_python_prints_it():
    with pytest.raises(ValueError) as info:
        _raise_chain()
    report = from_exception(info.value)
    assert [(b.type, b.message, b.relation) for b in report.blocks] == [
        ("KeyError", "'weights'", None),
        ("RuntimeError", "cannot load", "cause"),
        ("ValueError", "giving up", "context"),
    ]
    assert report.final.frames[-1].function == "_raise_chain"
    assert report.final.frames[-1].source == 'raise ValueError("giving up")'
    assert report.text.startswith("Traceback (most recent call last):")
    parsed = parse_text(report.text)
    assert summary(parsed) == summary(report)
    assert [b.line for b in parsed.blocks] == [b.line for b in report.blocks]
    assert user_frame_of(report).path == __file__


def test_from_exception_respects_suppressed_context_and_adds_notes():
    try:
        try:
            1 / 0
        except ZeroDivisionError:
            raise KeyError("x") from None
    except KeyError as err:
        if hasattr(err, "add_note"):
            err.add_note("while loading shard 3")
        else:
            err.__notes__ = ["while loading shard 3"]
        report = from_exception(err)
    assert [b.type for b in report.blocks] == ["KeyError"]
    assert report.final.message == "'x'\nwhile loading shard 3"


def test_from_exception_splits_a_dataloader_worker_message():
    message = (
        "Caught RuntimeError in DataLoader worker process 1.\n"
        "Original Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", '
        "line 309, in _worker_loop\n"
        "    data = fetcher.fetch(index)\n"
        '  File "/home/li/data.py", line 20, in __getitem__\n'
        "    return self.items[i]\n"
        "IndexError: list index out of range\n"
    )
    try:
        raise RuntimeError(message)
    except RuntimeError as err:
        report = from_exception(err)
    assert summary(report) == [
        ("exception", "IndexError", "worker"),
        ("exception", "RuntimeError", None),
    ]
    assert report.final.message == "Caught RuntimeError in DataLoader worker process 1."
    assert report.blocks[0].frames[-1] == Frame(
        "/home/li/data.py", 20, "__getitem__", "return self.items[i]"
    )


def test_from_exception_syntax_error():
    try:
        compile("def f(:\n    pass\n", "/home/li/model.py", "exec")
    except SyntaxError as err:
        report = from_exception(err)
    assert report.final.type == "SyntaxError"
    assert report.final.frames[-1].path == "/home/li/model.py"
    assert report.final.frames[-1].line == 1
    assert report.final.message and "model.py" not in report.final.message  # as printed


@pytest.mark.skipif(sys.version_info < (3, 11), reason="ExceptionGroup is Python 3.11+")
def test_from_exception_group():
    group_type = getattr(builtins, "ExceptionGroup")
    try:
        raise group_type("loading", [ValueError("bad shard"), TypeError("bad dtype")])
    except Exception as err:  # noqa: BLE001 -- the group itself is under test
        report = from_exception(err)
    assert summary(report) == [
        ("exception", "ValueError", "group"),
        ("exception", "TypeError", "group"),
        ("exception", "ExceptionGroup", None),
    ]


def test_from_exception_never_raises_on_a_broken_exception():
    class Broken(Exception):
        def __str__(self):
            raise RuntimeError("no str")

    try:
        raise Broken()
    except Broken as err:
        report = from_exception(err)
    assert report.final.type.endswith("Broken")
    assert "str() failed" in report.final.message
