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


def test_not_when_handed_on() -> None:
    handed = LOGGER + "\n    def writer(self):\n        return self.board\n"
    assert _lines(handed, TRAIN) == []


def test_not_when_never_logged_to_in_the_file() -> None:
    silent = LOGGER.replace("self.board.add_scalar(tag, value, step)", "pass")
    assert _lines(silent, TRAIN) == []


def test_not_without_the_project() -> None:
    found = check_source(LOGGER, "logger.py", frozenset({"TD705"}))
    assert found.findings == []
