"""`torchdoctor server` end to end: a real LSP client drives `python -m torchdoctor server` over
stdio, as an editor would."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time

import pytest

pytest.importorskip("pygls", reason="the language server needs pygls: pip install -e '.[test]'")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

# Only catches a hang: each step takes well under a second.
TIMEOUT = 30

SOURCE = (
    "import torch\n"
    "from torch.autograd import Variable\n"
    "x = Variable(torch.ones(2))  # noqa: TD999 \u6ce8\u91ca\n"
    "y = torch.ones(3)\n"
    "y.cuda()\n"
)
FIXED = SOURCE.replace("Variable(torch.ones(2))", "torch.ones(2)")


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "torchdoctor", "server"],
        # English unless a pyproject.toml says otherwise, whatever the machine's locale.
        server_env={**os.environ, "TORCHDOCTOR_LANG": "en"},
    )
)
async def client(lsp_client: LanguageClient):
    params = types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    # What the server said it can do, for the tests that read it.
    lsp_client.initialize_result = await asyncio.wait_for(  # type: ignore[attr-defined]
        lsp_client.initialize_session(params), TIMEOUT
    )
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), TIMEOUT)


@pytest.fixture
def project(tmp_path):
    """A project of its own, so that no pyproject.toml above the test's directory applies."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return tmp_path


async def diagnostics(client: LanguageClient, uri: str, until=lambda found: True):
    """The diagnostics published for `uri` once `until` holds for them."""

    async def published():
        while uri not in client.diagnostics or not until(list(client.diagnostics[uri])):
            await asyncio.sleep(0.02)
        return list(client.diagnostics[uri])

    return await asyncio.wait_for(published(), TIMEOUT)


def codes(found) -> list[str]:
    return sorted(d.code for d in found)


def open_file(client: LanguageClient, uri: str, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
    )


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """`text` with LSP edits applied (lines split as LSP splits them: at \\n, \\r\\n and \\r
    only; ASCII columns)."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        return starts[position.line] + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


async def actions_at(client: LanguageClient, uri: str, line: int, character: int, only=None):
    """The code actions for the cursor at a place, as an editor asks for them."""
    at = types.Position(line, character)
    params = types.CodeActionParams(
        types.TextDocumentIdentifier(uri),
        types.Range(at, at),
        types.CodeActionContext(diagnostics=[], only=only),
    )
    return await asyncio.wait_for(client.text_document_code_action_async(params), TIMEOUT)


@pytest.mark.asyncio
async def test_open_fix_and_edit_away(client: LanguageClient, project):
    path = project / "train.py"
    path.write_text(SOURCE)
    uri = path.as_uri()
    open_file(client, uri, SOURCE)
    found = await diagnostics(client, uri, lambda found: len(found) == 2)
    assert codes(found) == ["TD001", "TD103"]
    variable = next(d for d in found if d.code == "TD103")
    # Columns count UTF-16 units; the finding spans `Variable(torch.ones(2))`.
    assert (variable.range.start.line, variable.range.start.character) == (2, 4)
    assert (variable.range.end.line, variable.range.end.character) == (2, 27)

    actions = await actions_at(client, uri, 2, 8)
    fix = next(a for a in actions if a.kind == "quickfix" and a.is_preferred)
    assert "TD103" in fix.title
    assert apply(SOURCE, fix.edit.changes[uri]) == FIXED
    noqa = next(a for a in actions if "noqa" in a.title)
    assert (
        apply(SOURCE, noqa.edit.changes[uri])
        .splitlines()[2]
        .endswith("# noqa: TD999, TD103 \u6ce8\u91ca")
    )
    [fix_all] = await actions_at(client, uri, 0, 0, only=["source.fixAll"])
    assert apply(SOURCE, fix_all.edit.changes[uri]) == FIXED

    # The edit reaches the unsaved buffer: the finding goes, and the file on disk is untouched.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [types.TextDocumentContentChangeWholeDocument(FIXED)],
        )
    )
    found = await diagnostics(client, uri, lambda found: codes(found) == ["TD001"])
    assert found[0].range.start.line == 4
    assert path.read_text() == SOURCE


@pytest.mark.asyncio
async def test_typing_sends_the_last_versions_diagnostics_once_it_pauses(project):
    """Keys typed in quick succession: the diagnostics of the last version only, and not
    before the typing has paused for the debounce (the checks of the others, begun while the
    server waits, are thrown away)."""
    from pygls.lsp.client import LanguageClient as PlainClient

    from torchdoctor.server.app import DEBOUNCE_SECONDS

    client = PlainClient("test", "1")
    sent: list[tuple[int | None, list[str], float]] = []

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        sent.append((params.version, codes(params.diagnostics), time.monotonic()))

    async def sent_for(version: int) -> list[str]:
        while not any(v == version for v, _, _ in sent):
            await asyncio.sleep(0.02)
        return next(found for v, found, _ in sent if v == version)

    env = {**os.environ, "TORCHDOCTOR_LANG": "en"}
    await client.start_io(sys.executable, "-m", "torchdoctor", "server", env=env)
    try:
        params = types.InitializeParams(capabilities=types.ClientCapabilities())
        await asyncio.wait_for(client.initialize_async(params), TIMEOUT)
        client.initialized(types.InitializedParams())
        uri = (project / "train.py").as_uri()
        open_file(client, uri, SOURCE)
        assert await asyncio.wait_for(sent_for(1), TIMEOUT) == ["TD001", "TD103"]
        for version, text in ((2, FIXED), (3, SOURCE), (4, FIXED)):
            typed = time.monotonic()
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                    [types.TextDocumentContentChangeWholeDocument(text)],
                )
            )
        assert await asyncio.wait_for(sent_for(4), TIMEOUT) == ["TD001"]
        await asyncio.sleep(DEBOUNCE_SECONDS + 0.2)  # time for a stale version's to arrive
        assert [v for v, _, _ in sent] == [1, 4]
        assert sent[-1][2] - typed >= DEBOUNCE_SECONDS - 0.01
    finally:
        await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
        client.exit(None)
        await client.stop()


# A form feed (old code pages a file with them) and U+2028 in a string: line breaks for
# `str.splitlines`, not for Python's tokenizer nor for LSP.
ODD_BREAKS = (
    "import torch\n\x0c\n"
    "note = 'a\u2028b'\n"
    "from torch.autograd import Variable\n"
    "x = Variable(torch.ones(2))\n"
)


@pytest.mark.asyncio
async def test_lines_are_counted_as_lsp_counts_them(client: LanguageClient, project):
    capabilities = client.initialize_result.capabilities  # type: ignore[attr-defined]
    # The whole text on each change: nothing for a line count to drift on.
    assert capabilities.text_document_sync.change == types.TextDocumentSyncKind.Full
    uri = (project / "odd.py").as_uri()
    open_file(client, uri, "import torch\n")
    edited = ODD_BREAKS + "y = torch.ones(3)\ny.cuda()\n"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [types.TextDocumentContentChangeWholeDocument(edited)],
        )
    )
    found = await diagnostics(client, uri, lambda found: len(found) == 2)
    lines = {d.code: d.range.start.line for d in found}
    assert lines == {"TD103": 4, "TD001": 6}
    actions = await actions_at(client, uri, 4, 6)
    fix = next(a for a in actions if a.kind == "quickfix" and a.is_preferred)
    assert apply(edited, fix.edit.changes[uri]) == edited.replace(
        "Variable(torch.ones(2))", "torch.ones(2)"
    )


@pytest.mark.asyncio
async def test_unsafe_fix_is_offered_but_not_preferred(client: LanguageClient, project):
    uri = (project / "train.py").as_uri()
    open_file(client, uri, SOURCE)
    await diagnostics(client, uri, lambda found: len(found) == 2)
    actions = await actions_at(client, uri, 4, 1)
    [unsafe] = [a for a in actions if "TD001" in a.title and "unsafe" in a.title]
    assert not unsafe.is_preferred
    assert apply(SOURCE, unsafe.edit.changes[uri]).splitlines()[4] == "y = y.cuda()"


@pytest.mark.asyncio
async def test_hover_explains_in_the_configured_language(client: LanguageClient, project):
    (project / "pyproject.toml").write_text("[tool.torchdoctor]\nlang = 'zh'\n")
    uri = (project / "train.py").as_uri()
    open_file(client, uri, SOURCE)
    await diagnostics(client, uri, lambda found: len(found) == 2)
    params = types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(2, 8))
    answer = await asyncio.wait_for(client.text_document_hover_async(params), TIMEOUT)
    text = answer.contents.value
    assert "TD103" in text and "`variable-wrapper`" in text
    assert "\u4e3a\u4ec0\u4e48" in text and "Why is this bad?" not in text  # "why", in Chinese
    nothing = types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 3))
    assert await asyncio.wait_for(client.text_document_hover_async(nothing), TIMEOUT) is None


@pytest.mark.asyncio
async def test_settings_come_from_the_files_nearest_pyproject(client: LanguageClient, project):
    package = project / "pkg"
    package.mkdir()
    (package / "pyproject.toml").write_text("[tool.torchdoctor]\nignore = ['TD001']\n")
    uri = (package / "train.py").as_uri()
    open_file(client, uri, SOURCE)
    found = await diagnostics(client, uri)
    assert codes(found) == ["TD103"]


@pytest.mark.asyncio
async def test_a_broken_config_is_shown_and_the_server_keeps_serving(
    client: LanguageClient, project
):
    broken = project / "broken"
    broken.mkdir()
    (broken / "pyproject.toml").write_text("[tool.torchdoctor]\nselect = 3\n")
    uri = (broken / "train.py").as_uri()
    open_file(client, uri, SOURCE)
    assert await diagnostics(client, uri) == []
    assert any("select must be a list" in m.message for m in client.messages)
    other = (project / "train.py").as_uri()
    open_file(client, other, SOURCE)
    assert codes(await diagnostics(client, other)) == ["TD001", "TD103"]


@pytest.mark.asyncio
async def test_project_facts_hold_across_files(client: LanguageClient, project):
    # `Net` is an nn.Module only by what models.py says: saving it whole is then a finding.
    (project / "models.py").write_text("import torch.nn as nn\nclass Net(nn.Module):\n    pass\n")
    text = "import torch\nfrom models import Net\nnet = Net()\ntorch.save(net, 'net.pt')\n"
    uri = (project / "train.py").as_uri()
    open_file(client, uri, text)
    assert codes(await diagnostics(client, uri)) == ["TD503"]
    # Saving models.py as something else changes what train.py means.
    (project / "models.py").write_text("class Net:\n    pass\n")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier((project / "models.py").as_uri())
        )
    )
    assert await diagnostics(client, uri, lambda found: not found) == []


@pytest.mark.asyncio
async def test_notebook_cells_are_one_program(client: LanguageClient, project):
    notebook_uri = (project / "demo.ipynb").as_uri()
    cells = [
        "import torch\nfrom torch.autograd import Variable\n",
        "%matplotlib inline\nx = Variable(torch.ones(2))\n",
    ]
    cell_uris = [f"vscode-notebook-cell:{project / 'demo.ipynb'}#cell{i}" for i in range(2)]
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            types.NotebookDocument(
                notebook_uri,
                "jupyter-notebook",
                1,
                [types.NotebookCell(types.NotebookCellKind.Code, u) for u in cell_uris],
            ),
            [types.TextDocumentItem(u, "python", 1, t) for u, t in zip(cell_uris, cells)],
        )
    )
    found = await diagnostics(client, cell_uris[1])
    assert codes(found) == ["TD103"]
    assert found[0].range.start.line == 1  # within the cell, after the magic
    assert await diagnostics(client, cell_uris[0]) == []
    actions = await actions_at(client, cell_uris[1], 1, 5)
    fix = next(a for a in actions if a.is_preferred)
    assert (
        apply(cells[1], fix.edit.changes[cell_uris[1]]) == "%matplotlib inline\nx = torch.ones(2)\n"
    )

    # Editing the first cell changes what the second means: without the import, no finding.
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            types.VersionedNotebookDocumentIdentifier(version=2, uri=notebook_uri),
            types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            types.VersionedTextDocumentIdentifier(version=2, uri=cell_uris[0]),
                            [types.TextDocumentContentChangeWholeDocument("import torch\n")],
                        )
                    ]
                )
            ),
        )
    )
    assert await diagnostics(client, cell_uris[1], lambda found: not found) == []


def test_server_without_pygls_says_what_to_install(tmp_path):
    """Where pygls cannot be imported, one line says to install the extra; exit 2."""
    (tmp_path / "pygls").mkdir()
    (tmp_path / "pygls" / "__init__.py").write_text("raise ImportError('no', name='pygls')\n")
    result = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "server"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "torchdoctor: error: the language server needs pygls: install torchdoctor[server] "
        "(pip install 'torchdoctor[server]')"
    ]


@pytest.mark.parametrize(
    ("encoding", "character"),
    [
        (types.PositionEncodingKind.Utf16, 8),  # U+1F600 is two UTF-16 code units
        (types.PositionEncodingKind.Utf8, 12),  # ... four UTF-8 ones, and each CJK three
        (types.PositionEncodingKind.Utf32, 7),
    ],
)
def test_columns_are_counted_in_the_clients_code_units(encoding, character):
    from pygls.workspace import PositionCodec

    from torchdoctor.server.positions import Lines

    lines = Lines("a = 1\ns = '\U0001f600\u6ce8'; t\r\n", PositionCodec(encoding))
    # Column 8 (1-based, in characters) is the string's closing quote: 7 characters before it.
    assert lines.position(2, 8) == types.Position(1, character)
    assert lines.position(1, 3) == types.Position(0, 2)  # an ASCII prefix: one unit each
    assert lines.lines == ["a = 1", "s = '\U0001f600\u6ce8'; t", ""]


def test_a_check_stops_at_its_next_statement_once_its_flag_is_set():
    """The server's way to drop a stale check: the flag stops the walk, outside it nothing
    changes."""
    import threading

    from torchdoctor.lint.checker import check_source
    from torchdoctor.lint.stopping import CheckStopped, stoppable

    codes = frozenset({"TD103"})
    source = SOURCE * 50
    flag = threading.Event()
    with stoppable(flag):
        assert len(check_source(source, "a.py", codes).findings) == 50
        flag.set()
        with pytest.raises(CheckStopped):
            check_source(source, "a.py", codes)
    assert len(check_source(source, "a.py", codes).findings) == 50


@pytest.mark.asyncio
async def test_the_check_of_a_replaced_version_frees_the_worker_at_once():
    """A key typed while a check runs: the check is stopped, so the next version's check need
    not wait for it to end."""
    import threading

    from torchdoctor.lint.stopping import CheckStopped, stop_flag
    from torchdoctor.server.app import DoctorServer

    server = DoctorServer("en")
    began = threading.Event()

    def endless_check() -> None:  # a check that ends only when stopped
        began.set()
        flag = stop_flag()
        assert flag is not None
        while not flag.wait(0.01):
            pass
        raise CheckStopped

    stale = asyncio.ensure_future(server._contained(endless_check))
    assert await asyncio.to_thread(began.wait, TIMEOUT)
    stale.cancel()
    assert await asyncio.wait_for(server._contained(lambda: "next version"), TIMEOUT) == (
        "next version"
    )
    with pytest.raises(asyncio.CancelledError):
        await stale
