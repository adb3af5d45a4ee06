"""tensorboard-writer-not-closed on a writer kept on an object (`self.writer = SummaryWriter()`):
reported when the file only logs to the attribute and no file of the project closes or flushes
anything of that name; never when the project is unknown (a file checked on its own)."""

from __future__ import annotations

from torchdoctor.lint.checker import check_source
from torchdoctor.lint.project import read_facts

# A logger class whose close() closes its text log only (issue 13: CenterNet's and SimSiam's
# loggers keep a writer on self and never close it).
LOGGER = """
from torch.utils.tensorboard import SummaryWriter


class ScalarLogger:
    def __init__(self, log_dir, enabled=True):
        self.board = SummaryWriter(log_dir) if enabled else None
        self.text = open(log_dir + "/log.txt", "w")

    def scalar(self, tag, value, step):
        if self.board is not None:
            self.board.add_scalar(tag, value, step)

    def close(self):
        self.text.close()
"""
TRAIN = """
from logger import ScalarLogger

logger = ScalarLogger("runs")
logger.scalar("loss", 1.0, 0)
"""


def _lines(source: str, *others: str) -> list[int]:
    project = read_facts([text.encode() for text in (source, *others)])
    found = check_source(source, "logger.py", frozenset({"TD705"}), project=project)
    return [f.line for f in found.findings]


def test_writer_kept_on_an_object_that_never_closes_it() -> None:
    assert _lines(LOGGER, TRAIN) == [7]


def test_not_when_another_module_closes_it() -> None:
    assert _lines(LOGGER, TRAIN + "logger.board.close()\n") == []


def test_not_when_the_class_closes_it() -> None:
    closing = LOGGER.replace("self.text.close()", "self.text.close()\n        self.board.flush()")
    assert _lines(closing) == []


def test_reading_its_directory_neither_closes_nor_hands_it_on() -> None:
    # SimCLR: `os.path.join(self.writer.log_dir, "training.log")` for its log and checkpoints.
    directory = LOGGER + "\n    def path(self, name):\n        return self.board.log_dir + name\n"
    assert _lines(directory, TRAIN) == [7]
    # Any other attribute may be its file writer, flushed elsewhere.
    other = LOGGER + "\n    def events(self):\n        return self.board.file_writer\n"
    assert _lines(other, TRAIN) == []


def test_not_when_handed_on() -> None:
    handed = LOGGER + "\n    def writer(self):\n        return self.board\n"
    assert _lines(handed, TRAIN) == []


def test_not_when_never_logged_to_in_the_file() -> None:
    silent = LOGGER.replace("self.board.add_scalar(tag, value, step)", "pass")
    assert _lines(silent, TRAIN) == []


def test_not_without_the_project() -> None:
    found = check_source(LOGGER, "logger.py", frozenset({"TD705"}))
    assert found.findings == []


# yolov3.pytorch's Logger: a method makes the writer and returns it with another value; the
# constructor keeps it on self, and the class only logs to it.
RETURNED = """
import os
from torch.utils.tensorboard import SummaryWriter


class Logger:
    def __init__(self, log_path):
        self.log_path = log_path
        self.tensorboard_writer, self.weights_path = self.init_log()

    def log_in_tensorboard(self, key, value, step):
        self.tensorboard_writer.add_scalar(key, value, step)

    def init_log(self):
        log_dir = os.path.join(self.log_path, "run")
        tensorboard_writer = SummaryWriter(log_dir=log_dir)
        return tensorboard_writer, os.path.join(log_dir, "weights")
"""


def test_writer_returned_to_an_attribute_that_is_only_logged_to() -> None:
    assert _lines(RETURNED, TRAIN) == [16]


def test_returned_writer_not_when_its_attribute_is_closed() -> None:
    assert _lines(RETURNED, TRAIN + "logger.tensorboard_writer.close()\n") == []
    closing = RETURNED + "\n    def close(self):\n        self.tensorboard_writer.close()\n"
    assert _lines(closing) == []


def test_returned_writer_not_when_a_call_keeps_it_elsewhere() -> None:
    # One call site hands the pair to a local: whoever holds it may close it.
    elsewhere = (
        RETURNED + "\n    def again(self):\n        pair = self.init_log()\n        return pair\n"
    )
    assert _lines(elsewhere, TRAIN) == []
    swapped = RETURNED.replace(
        "self.tensorboard_writer, self.weights_path = self.init_log()",
        "self.weights_path, self.tensorboard_writer = self.init_log()",
    )
    assert _lines(swapped, TRAIN) == []  # the writer lands in weights_path, used otherwise


def test_returned_writer_not_without_the_project() -> None:
    assert check_source(RETURNED, "logger.py", frozenset({"TD705"})).findings == []
