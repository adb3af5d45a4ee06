"""Reading user files never blocks and never reads without end."""

from __future__ import annotations

import os

import pytest

from torchdoctor.user_files import RefusedFile, read_regular_file


def test_regular_file_is_read(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"import torch\n")
    assert read_regular_file(path) == b"import torch\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_without_writer_is_refused_at_once(tmp_path):
    fifo = tmp_path / "p.py"
    os.mkfifo(fifo)
    with pytest.raises(RefusedFile, match="FIFO"):
        read_regular_file(fifo)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_link_to_endless_device_is_refused(tmp_path):
    link = tmp_path / "z.py"
    link.symlink_to("/dev/zero")
    with pytest.raises(RefusedFile, match="character device"):
        read_regular_file(link)


def test_directory_is_refused(tmp_path):
    with pytest.raises(RefusedFile, match="directory"):
        read_regular_file(tmp_path)


def test_file_over_the_limit_is_refused_with_its_size(tmp_path):
    path = tmp_path / "big.py"
    path.write_bytes(b"x" * 100)
    with pytest.raises(RefusedFile, match="too large"):
        read_regular_file(path, limit=10)
    assert read_regular_file(path, limit=100) == b"x" * 100


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "nope.py")
