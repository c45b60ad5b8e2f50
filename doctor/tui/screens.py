"""Modal screens: a finding in full, the re-run diff, export, and help."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static

from doctor.findings import Finding
from doctor.i18n import N_, _

if TYPE_CHECKING:
    from doctor.tui.app import DoctorApp

HELP = N_("""\
Quick start
  1. The first row is the worst problem (ranked by severity, then impact).
  2. Its explanation, evidence and fix are in the pane below (Enter: full screen).
  3. Press c to copy its fix commands to the clipboard.
  4. After fixing, press r to run again and see what was fixed.

Findings view
  ↑ ↓ PgUp PgDn     move between findings
  Enter             the selected finding in full screen
  c                 copy the fix commands (OSC 52 clipboard)
  s                 severity filter: all but pass, critical, high, …
  f                 area (category) filter: all, PCIe, NUMA, network, RDMA, runtime, GPU
  Tab               move focus to the detail pane (then ↑ ↓ scroll it)

Topology view (t)
  NUMA node → root port → PCIe switch → GPUs and NICs, with link generation and width.
  Red "◀ degraded link": trained below what both ends support.
  Yellow: speed reduced on an idle GPU (power saving, usually harmless).
  ↑ ↓ select a device (its findings are listed), Enter jumps to its first finding.

Everywhere
  r   run the checks again (live host) or re-read the snapshot, then show the diff
  d   show the diff against the previous run again
  e   export the report as HTML, Markdown or PDF
  t   switch between findings and topology
  ?   this help            q   quit (Esc closes a window)
  Ctrl+P  command palette (e.g. change theme for a light or dark terminal)

Severities: CRITICAL > HIGH > MEDIUM > LOW > UNKNOWN (could not check) > INFO > PASS.
""")


class _Closable(ModalScreen[None]):
    """A window of scrollable text (its body's id ``body``) over the main screen; Esc or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", _("Close")),
        Binding("q", "close", _("Close"), show=False),
    ]

    def __init__(self, text: Text, body: str) -> None:
        super().__init__()
        self.text = text
        self.body_id = body

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="modal-body", id=self.body_id):
            yield Static(self.text, markup=False)
        yield Footer(show_command_palette=False)

    def action_close(self) -> None:
        self.dismiss(None)


class FindingScreen(_Closable):
    """One finding, full screen and scrollable; ``c`` copies its fix."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy", _("Copy fix")),
        Binding("escape", "close", _("Back")),
        Binding("q", "close", _("Back"), show=False),
    ]

    def __init__(self, finding: Finding, text: Text) -> None:
        super().__init__(text, "finding-full")
        self.finding = finding

    def action_copy(self) -> None:
        app: DoctorApp = self.app  # type: ignore[assignment]
        app.copy_fix(self.finding)


class DiffScreen(_Closable):
    """Fixed / new / changed / unchanged problems after a re-run."""

    def __init__(self, text: Text) -> None:
        super().__init__(text, "diff")


class HelpScreen(_Closable):
    BINDINGS: ClassVar[list[BindingType]] = [
        *_Closable.BINDINGS,
        Binding("question_mark", "close", _("Close"), show=False),
    ]

    def __init__(self) -> None:
        super().__init__(Text(_(HELP)), "help")


class ExportScreen(ModalScreen[tuple[str, str] | None]):
    """Pick a format and a file name; returns (format, path) or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", _("Cancel"))]
    def __init__(self, base: str, available: dict[str, bool], extensions: dict[str, str]) -> None:
        super().__init__()
        self.base = base
        self.available = available
        self.extensions = extensions  # format -> file extension, in button order

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Label(_("Export the report. File name (the extension is added):"))
            yield Input(self.base, id="export-path")
            with Horizontal():
                for fmt in self.extensions:
                    ok = self.available.get(fmt, False)
                    yield Button({"md": "Markdown"}.get(fmt, fmt.upper()), id=f"export-{fmt}",
                                 disabled=not ok, variant="primary" if ok else "default")
            missing = [f for f, ok in self.available.items() if not ok]
            if missing:
                yield Label(Text(_("not available here: {formats} (renderer not installed)").format(formats=", ".join(missing)), style="dim"))
            yield Label(Text(_("Tab: move   Enter: export   Esc: cancel"), style="dim"))

    def on_mount(self) -> None:
        first = next((f for f in self.extensions if self.available.get(f)), None)
        if first:
            self.query_one(f"#export-{first}", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        fmt = (event.button.id or "").removeprefix("export-")
        self._submit(fmt)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        first = next((f for f in self.extensions if self.available.get(f)), None)
        if first:
            self._submit(first)

    def _submit(self, fmt: str) -> None:
        base = self.query_one("#export-path", Input).value.strip() or self.base
        ext = "." + self.extensions[fmt]
        self.dismiss((fmt, base if base.endswith(ext) else base + ext))

    def action_cancel(self) -> None:
        self.dismiss(None)
