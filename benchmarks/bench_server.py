"""Latency of `torchdoctor server`: diagnostics for a 2,000-line file after an edit.

    python benchmarks/bench_server.py [--repeat 20] [--lines 2000]

Two measures, each against `ast.parse` of the same file, measured in the same run:
- in process: what the server does for one edit (check the buffer with its settings and
  project facts, make the LSP diagnostics), best CPU time of `--repeat` edits, each a new
  version of the buffer;
- end to end: a real LSP client edits the buffer of `python -m torchdoctor server` over stdio
  and waits for the diagnostics of the last version, twice over: one edit, then a pause; and
  typing (`--keys` edits `--interval` seconds apart, as keys typed in a word), then a pause.
  The server's debounce (the pause it waits for before it sends diagnostics) is taken off the
  time from the last edit to its diagnostics: what is left is what the user waits beyond it.
  With it, the CPU time the server process and the client spent per edit (the server's read
  from /proc, where there is one): on a busy machine the wait is that work plus the time the
  processes waited for a core; and the diagnostics of versions a later edit replaced that
  were sent anyway (none should be).
The target is well under 100 ms for the wait.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Iterator

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.workspace import PositionCodec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_cpu_seconds  # noqa: E402

from torchdoctor.server.analysis import Analysis  # noqa: E402
from torchdoctor.server.app import DEBOUNCE_SECONDS  # noqa: E402
from torchdoctor.server.diagnostics import diagnostic  # noqa: E402
from torchdoctor.server.positions import Lines  # noqa: E402

SERVER = (sys.executable, "-m", "torchdoctor", "server", "--lang", "en")
# A training module's usual code, with a pitfall, repeated with new names: the loss summed with
# its graph (accumulated-loss-graph). `images.cuda()` is no longer reported (the loader's items
# are not known to be tensors), which had left this file with no diagnostic to send.
BLOCK = """

class Net{n}(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.layer = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.layer(x)).view(x.size(0), -1)


def train{n}(model, loader, optimizer, device):
    model.train()
    total = 0.0
    for step, (images, labels) in enumerate(loader):
        images.cuda()
        output = model(images.to(device))
        loss = F.cross_entropy(output, labels.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss
    return total / max(1, step)
"""
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def source(lines: int) -> str:
    parts, count, n = [HEADER], HEADER.count("\n"), 0
    while count < lines:
        parts.append(BLOCK.format(n=n))
        count += BLOCK.count("\n")
        n += 1
    return "".join(parts)


def in_process(text: str, path: Path, repeat: int) -> tuple[float, int]:
    """The best CPU time of the server's work for one edit, and the diagnostics it makes. Each
    run checks a new version of the buffer (a line typed in the middle, as the end-to-end
    measure does): the server keeps what an edit leaves unchanged, so checking the same text
    again would measure less than an edit costs."""
    analysis = Analysis("en")
    codec = PositionCodec()
    versions = edited_versions(text)

    def one_edit() -> int:
        version = next(versions)
        findings, _ = analysis.check_python(version, path)
        lines = Lines(version, codec)
        return len([diagnostic(f, lines) for f in findings])

    shown = one_edit()  # the project's facts are read once, at the first check
    return best_cpu_seconds(one_edit, repeat), shown


def edited_versions(text: str) -> Iterator[str]:
    """The buffer after each of a series of edits: a comment typed on a new line in the middle
    of the file, a new one each time."""
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    for version in count(2):
        yield "".join(lines[:middle]) + f"# edit {version}\n" + "".join(lines[middle:])


@dataclass
class EndToEnd:
    waits: list[float]  # seconds from each last edit to its diagnostics, less the debounce
    server_cpu: float | None  # CPU seconds of the server process per edit (None: unknown)
    client_cpu: float  # CPU seconds of this client per edit
    stale: int  # diagnostics sent for versions a later edit had replaced


async def end_to_end(text: str, path: Path, repeat: int, keys: int, interval: float) -> EndToEnd:
    """`repeat` times: `keys` edits `interval` seconds apart, then wait for the diagnostics of
    the last one."""
    client = LanguageClient("bench", "1")
    published: dict[int, float] = {}
    arrived = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        if params.version is not None:
            published.setdefault(params.version, time.perf_counter())
            arrived.set()

    async def until_published(version: int) -> None:
        # Woken by the diagnostics themselves: a client polling the clock would take CPU time
        # from the server it measures on a machine with few cores.
        while version not in published:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 60.0)

    await client.start_io(*SERVER)
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    client.initialized(types.InitializedParams())
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
    )
    await until_published(1)
    server = _cpu_of(client._server.pid) if client._server is not None else None
    mine = time.process_time()
    waits, lasts = [], []
    versions = zip(count(2), edited_versions(text))
    for _ in range(repeat):
        for key in range(keys):
            if key:
                await asyncio.sleep(interval)
            version, edited = next(versions)
            # The server asks for the whole text at each change (full document sync), which is
            # what an editor then sends.
            change = types.TextDocumentContentChangeWholeDocument(edited)
            start = time.perf_counter()
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(version=version, uri=uri), [change]
                )
            )
        await until_published(version)
        waits.append(published[version] - start - DEBOUNCE_SECONDS)
        lasts.append(version)
    client_cpu = (time.process_time() - mine) / (repeat * keys)
    if server is not None and client._server is not None:
        after = _cpu_of(client._server.pid)
        server = None if after is None else (after - server) / (repeat * keys)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    stale = len(set(published) - set(lasts) - {1})
    return EndToEnd(waits, server, client_cpu, stale)


def _cpu_of(pid: int) -> float | None:
    """The CPU seconds a process has used (user and system), from /proc; None without it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--keys", type=int, default=4, help="edits typed before each pause")
    parser.add_argument("--interval", type=float, default=0.15, help="seconds between two keys")
    args = parser.parse_args()
    text = source(args.lines)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "train.py"
        path.write_text(text)
        (Path(directory) / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        parse = best_cpu_seconds(lambda: ast.parse(text), args.repeat)
        check, shown = in_process(text, path, args.repeat)
        runs = [
            ("one edit", asyncio.run(end_to_end(text, path, args.repeat, 1, 0.0))),
            (
                f"{args.keys} keys {args.interval * 1000:.0f} ms apart",
                asyncio.run(end_to_end(text, path, args.repeat, args.keys, args.interval)),
            ),
        ]
    ms = 1000
    print(f"file: {text.count(chr(10))} lines, {len(text)} characters, {shown} diagnostics")
    print(f"{'measure':64} {'ms':>8} {'x ast.parse':>12}")
    rows = [
        ("ast.parse (baseline, best CPU)", parse),
        ("server work for one edit, in process (best CPU)", check),
    ]
    for name, run in runs:
        rows += [
            (
                f"{name}: last edit -> diagnostics, median (less the debounce)",
                statistics.median(run.waits),
            ),
            (f"{name}: last edit -> diagnostics, worst (less the debounce)", max(run.waits)),
        ]
        if run.server_cpu is not None:
            rows.append((f"{name}: server process CPU per edit (mean)", run.server_cpu))
        rows.append((f"{name}: client CPU per edit (mean)", run.client_cpu))
    for name, value in rows:
        print(f"{name:64} {value * ms:8.1f} {value / parse:12.2f}")
    for name, run in runs:
        print(f"({name}: diagnostics sent for versions a later edit replaced: {run.stale})")
    print(f"(debounce: {DEBOUNCE_SECONDS * ms:.0f} ms after the last keystroke)")
    if hasattr(os, "getloadavg"):  # the wall times depend on it, the CPU times much less
        print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
