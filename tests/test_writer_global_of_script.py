"""tensorboard-writer-not-closed on a writer kept in a global: reported in a script, whose
globals no other module imports, not in a library module (the fixture's `set_global`)."""

from __future__ import annotations

from torchdoctor.lint.checker import check_source

# semseg tool/train.py: `global writer` in main_worker, logged to by train(), never closed
# (semseg's writer is tensorboardX's, which closes itself at exit: here torch's).
SCRIPT = """
import torch
from torch.utils.tensorboard import SummaryWriter


def main_worker(args):
    global writer
    writer = SummaryWriter(args.save_path)
    for epoch in range(args.epochs):
        train(epoch)


def train(epoch):
    writer.add_scalar("loss_train", 1.0, epoch)


if __name__ == "__main__":
    main_worker(None)
"""


def _lines(source: str) -> list[int]:
    return [f.line for f in check_source(source, "train.py", frozenset({"TD705"})).findings]


def test_global_writer_of_a_script_is_reported() -> None:
    assert _lines(SCRIPT) == [8]


def test_a_tensorboardx_writer_closes_itself_at_exit() -> None:
    tensorboardx = SCRIPT.replace("torch.utils.tensorboard", "tensorboardX")
    assert _lines(tensorboardx) == []


def test_global_writer_closed_elsewhere_in_the_script_is_not() -> None:
    closed = SCRIPT.replace("        train(epoch)\n", "        train(epoch)\n    writer.close()\n")
    assert _lines(closed) == []


def test_global_writer_of_a_library_module_is_not() -> None:
    assert _lines(SCRIPT.split("\nif __name__")[0]) == []


# pytorch-flows main.py: no main guard; the command line is parsed and the training loop runs at
# the top level, and `global writer` in the functions only logs.
TOP_LEVEL_SCRIPT = """
import argparse
from torch.utils.tensorboard import SummaryWriter

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()

writer = SummaryWriter(comment="flows")


def train(epoch):
    global writer
    writer.add_scalar("training/loss", 1.0, epoch)


for epoch in range(args.epochs):
    train(epoch)
"""


def test_global_writer_of_a_script_parsing_its_command_line_at_the_top_is_reported() -> None:
    assert _lines(TOP_LEVEL_SCRIPT) == [9]


def test_a_module_that_parses_arguments_only_in_a_function_is_not_a_script() -> None:
    library = TOP_LEVEL_SCRIPT.replace(
        "args = parser.parse_args()\n", "\n\ndef options():\n    return parser.parse_args()\n"
    ).replace("for epoch in range(args.epochs):\n    train(epoch)\n", "")
    assert "def options" in library
    assert _lines(library) == []
