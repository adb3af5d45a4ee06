"""Latency of `torchdoctor server`: diagnostics for a 2,000-line file after an edit.

    python benchmarks/bench_server.py [--repeat 20] [--lines 2000]

Two measures, each against `ast.parse` of the same file, measured in the same run:
- in process: what the server does for one edit (check the buffer with its settings and
  project facts, make the LSP diagnostics), best CPU time of `--repeat` runs;
- end to end: a real LSP client edits the buffer of `python -m torchdoctor server` over stdio
  and waits for the diagnostics of that version; the server's debounce (the pause it waits for
  the typing to stop) is taken off, what is left is what the user waits once they stop.
The target is well under 100 ms for the wait.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.workspace import PositionCodec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_cpu_seconds  # noqa: E402

from torchdoctor.server.analysis import Analysis  # noqa: E402
from torchdoctor.server.app import DEBOUNCE_SECONDS  # noqa: E402
from torchdoctor.server.diagnostics import diagnostic  # noqa: E402
from torchdoctor.server.positions import Lines  # noqa: E402

# A training module's usual code, with a pitfall or two, repeated with new names.
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
        total += loss.item()
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


def in_process(text: str, path: Path, repeat: int) -> float:
    analysis = Analysis("en")
    codec = PositionCodec()

    def one_edit() -> None:
        findings, _ = analysis.check_python(text, path)
        lines = Lines(text, codec)
        [diagnostic(f, lines) for f in findings]

    one_edit()  # the project's facts are read once, at the first check
    return best_cpu_seconds(one_edit, repeat)


async def end_to_end(text: str, path: Path, repeat: int) -> list[float]:
    client = LanguageClient("bench", "1")
    published: dict[int, float] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        if params.version is not None:
            published.setdefault(params.version, time.perf_counter())

    await client.start_io(sys.executable, "-m", "torchdoctor", "server", "--lang", "en")
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    client.initialized(types.InitializedParams())
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
    )
    await _until(lambda: 1 in published)
    waits = []
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    for version in range(2, repeat + 2):
        # A comment typed on a new line in the middle of the file. The server asks for the whole
        # text at each change (full document sync), which is what an editor then sends.
        edited = "".join(lines[:middle]) + f"# edit {version}\n" + "".join(lines[middle:])
        change = types.TextDocumentContentChangeWholeDocument(edited)
        start = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=uri), [change]
            )
        )
        await _until(lambda: version in published)
        waits.append(published[version] - start - DEBOUNCE_SECONDS)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return waits


async def _until(condition, timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("no diagnostics from the server")
        await asyncio.sleep(0.001)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--lines", type=int, default=2000)
    args = parser.parse_args()
    text = source(args.lines)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "train.py"
        path.write_text(text)
        (Path(directory) / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        parse = best_cpu_seconds(lambda: ast.parse(text), args.repeat)
        check = in_process(text, path, args.repeat)
        waits = asyncio.run(end_to_end(text, path, args.repeat))
    ms = 1000
    print(f"file: {text.count(chr(10))} lines, {len(text)} characters")
    print(f"{'measure':48} {'ms':>8} {'x ast.parse':>12}")
    print(f"{'ast.parse (baseline, best CPU)':48} {parse * ms:8.1f} {1:12.2f}")
    print(
        f"{'server work for one edit, in process (best CPU)':48} {check * ms:8.1f} "
        f"{check / parse:12.2f}"
    )
    for name, value in (
        ("edit -> diagnostics over stdio, median", statistics.median(waits)),
        ("edit -> diagnostics over stdio, worst", max(waits)),
    ):
        print(f"{name + ' (less the debounce)':48} {value * ms:8.1f} {value / parse:12.2f}")
    print(f"(debounce: {DEBOUNCE_SECONDS * ms:.0f} ms after the last keystroke)")


if __name__ == "__main__":
    main()
