"""The ``gnd tui`` application: findings table + detail pane, topology tree, re-run with diff, export."""

from __future__ import annotations

import os
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Vertical, VerticalScroll
from textual.notifications import SeverityLevel
from textual.widgets import ContentSwitcher, DataTable, Footer, Static, Tree
from textual.widgets.tree import TreeNode

from doctor.findings import Finding, severity_order
from doctor.i18n import _, localise, ngettext
from doctor.runner import Result
from doctor.tui.clipboard import copy_local
from doctor.tui.loader import Loader
from doctor.tui.model import (
    CATEGORY_FILTERS,
    SEVERITY_FILTERS,
    RunDiff,
    about_device,
    category_label,
    clean,
    diff_runs,
    filter_findings,
    fix_script,
)
from doctor.tui.render import (
    Palette,
    device_text,
    diff_text,
    filter_text,
    finding_text,
    header_text,
    severity_cell,
    topo_label,
)
from doctor.tui.screens import DiffScreen, ExportScreen, FindingScreen, HelpScreen
from doctor.tui.topology import TopoNode, build_topology

FINDINGS, TOPOLOGY = "findings-view", "topology-view"
#: Actions that belong to the main screen (disabled while a window is open on top of it)
MAIN_ACTIONS = frozenset({"copy", "severity", "category", "topology", "rerun", "diff", "export", "open"})

CSS = """
#header { height: 2; padding: 0 1; background: $panel; }
#filters { height: 1; padding: 0 1; }
#findings-view, #topology-view { layout: vertical; }
#left { height: 2fr; }
#table { height: 1fr; }
#detail-scroll, #device-scroll { height: 3fr; border-top: solid $accent; padding: 0 1; }
#tree { height: 3fr; overflow-x: hidden; }
#device-scroll { height: 2fr; }
Screen.-wide #findings-view, Screen.-wide #topology-view { layout: horizontal; }
Screen.-wide #left, Screen.-wide #tree { width: 3fr; height: 1fr; }
Screen.-wide #detail-scroll, Screen.-wide #device-scroll {
    width: 2fr; height: 1fr; border-top: none; border-left: solid $accent;
}
#detail-scroll:focus, #device-scroll:focus { border-top: solid $primary; }
Screen.-wide #detail-scroll:focus, Screen.-wide #device-scroll:focus { border-left: solid $primary; }
FindingScreen, DiffScreen, HelpScreen, ExportScreen { align: center middle; }
.modal-body {
    width: 100%; height: 1fr; max-width: 120; max-height: 50;
    border: round $accent; background: $surface; padding: 0 1;
}
#export-box { width: 72; max-width: 100%; height: auto; border: round $accent; background: $surface; padding: 0 1; }
#export-box Horizontal { height: auto; }
#export-box Button { margin: 0 1 0 0; }
"""


def prefers_light(environ: dict[str, str] | None = None) -> bool:
    """Whether the terminal says it has a light background (``COLORFGBG=0;15``)."""
    value = (environ if environ is not None else dict(os.environ)).get("COLORFGBG", "")
    bg = value.rsplit(";", 1)[-1]
    return bg.isdigit() and int(bg) in (7, 15)


class FindingsTable(DataTable[Any]):
    """The findings table; tells the app when its width changes so columns are re-fitted."""

    fitted_width = 0

    def on_resize(self) -> None:
        if self.size.width != self.fitted_width:
            self.app.call_after_refresh(self.app.fill_table)  # type: ignore[attr-defined]


class DoctorApp(App[int]):
    """Interactive triage over one source. ``loader`` runs the checks (in a worker thread)."""

    TITLE = "gpu-node-doctor"
    CSS = CSS
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", _("Details"), key_display="⏎"),
        Binding("c", "copy", _("Copy fix")),
        Binding("s", "severity", _("Severity"), show=False),
        Binding("f", "category", _("Area"), show=False),
        Binding("t", "topology", _("Topology")),
        Binding("r", "rerun", _("Re-run")),
        Binding("d", "diff", _("Diff"), show=False),
        Binding("e", "export", _("Export")),
        Binding("question_mark", "help", _("Help"), key_display="?"),
        Binding("q", "quit", _("Quit")),
    ]

    def __init__(self, loader: Loader, live: bool = False, exporter: Any = None) -> None:
        """``exporter``: the report formats (``reports.formats``: ``FORMATS``, ``OFFERED``, ``available()``,
        ``default_path()``, ``export()``), given by ``gnd tui``; None disables export."""
        super().__init__()
        self.loader = loader
        self.exporter = exporter
        self.live = live
        self.result: Result | None = None
        #: the last result as the loader gave it (``result`` is it in the current language)
        self.raw: Result | None = None
        self.previous: Result | None = None
        self.diff: RunDiff | None = None
        self.shown: list[Finding] = []
        self.severity_filter = 0
        self.category_filter = 0
        self.running = False
        self.status = ""
        self.exported: list[str] = []
        #: (title, message) of every notification shown, oldest first
        self.notices: list[tuple[str, str]] = []
        if prefers_light():
            self.theme = "textual-light"

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        self.notices.append((title, message))
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    # --- layout --------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="header", markup=False)
        with ContentSwitcher(initial=FINDINGS, id="views"):
            with Container(id=FINDINGS):
                with Vertical(id="left"):
                    yield Static(id="filters", markup=False)
                    yield FindingsTable(id="table", cursor_type="row", zebra_stripes=True)
                with VerticalScroll(id="detail-scroll") as detail:
                    detail.border_title = "⏎ full screen · c copy fix · Tab scroll"
                    yield Static(id="detail", markup=False)
            with Container(id=TOPOLOGY):
                tree: Tree[TopoNode | None] = Tree(_("PCIe topology"), id="tree")
                tree.show_root = False
                tree.auto_expand = False
                tree.guide_depth = 2
                yield tree
                with VerticalScroll(id="device-scroll") as pane:
                    pane.border_title = "⏎ jump to its findings · t back to the list"
                    yield Static(id="device", markup=False)
        yield Footer(show_command_palette=False)

    @property
    def table(self) -> DataTable[Any]:
        return self.screen_stack[0].query_one("#table", DataTable)

    @property
    def topo_tree(self) -> Tree[TopoNode | None]:
        return self.screen_stack[0].query_one("#tree", Tree)

    def _static(self, ident: str) -> Static:
        return self.screen_stack[0].query_one(f"#{ident}", Static)

    @property
    def palette(self) -> Palette:
        return Palette(self.get_css_variables())

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, lambda _theme: self.redraw())
        self.table.focus()
        self.start_run()

    # --- running the checks --------------------------------------------------------------------
    def start_run(self) -> None:
        if self.running:
            self.notify(_("The checks are already running."), severity="warning")
            return
        self.running = True
        what = _("running the checks on this host") if self.live else _("reading the snapshot and running the checks")
        self.status = what + " …"
        self.screen_stack[0].query_one("#views").loading = True
        self.draw_header()
        self._run_worker()

    @work(thread=True, exclusive=True, group="run")
    def _run_worker(self) -> None:
        try:
            result = self.loader()
        except Exception as exc:  # a bad source or a broken check: report it, keep the last result
            self.call_from_thread(self._run_failed, f"{type(exc).__name__}: {exc}")
        else:
            self.call_from_thread(self._run_done, result)

    def _run_failed(self, message: str) -> None:
        self.running = False
        self.screen_stack[0].query_one("#views").loading = False
        self.status = _("run failed")
        self.notify(clean(message), title=_("Run failed"), severity="error", markup=False, timeout=10)
        self.redraw()

    def _run_done(self, result: Result) -> None:
        self.running = False
        self.screen_stack[0].query_one("#views").loading = False
        if self.result is not None and self.raw is not None:
            self.previous = self.result
            self.diff = localise(diff_runs(self.raw.findings, result.findings))  # compared in English
        self.raw = result
        self.result = localise(result)  # drawn in the language asked for (the same result in English)
        self.status = (_("re-run: {fixed} fixed, {new} new (d)").format(fixed=len(self.diff.fixed),
                                                                        new=len(self.diff.new))
                       if self.diff else "")
        self.redraw()
        if self.diff is not None:
            self.push_screen(DiffScreen(diff_text(self.diff, self.palette)))

    # --- drawing -------------------------------------------------------------------------------
    def redraw(self) -> None:
        self.draw_header()
        self.fill_table()
        self.fill_tree()

    def draw_header(self) -> None:
        r = self.result
        text = header_text(r.source if r else {}, r.inventory if r else {}, r.findings if r else [],
                           self.palette, self.status, r.summary() if r else None)
        self._static("header").update(text)

    def fill_table(self) -> None:
        if self.result is None:
            self._static("filters").update(Text(""))
            self._static("detail").update(Text(self.status or _("no result yet"), style="dim"))
            return
        table = self.table
        keep = self.selected
        self.shown = filter_findings(self.result.findings, self.severity_filter, self.category_filter)
        pal = self.palette
        self._static("filters").update(filter_text(self.severity_filter, self.category_filter, len(self.shown),
                                                   len(self.result.findings), pal))
        width = max(table.size.width or self.size.width, 40)
        if isinstance(table, FindingsTable):
            table.fitted_width = table.size.width
        narrow = width < 100
        fixed = 3 + 8 + (0 if narrow else 7) + 2 * (4 if narrow else 5) + 4  # columns, padding, scrollbar
        subject_w = min(max((len(f.subject) for f in self.shown), default=7), max(12, (width - fixed) // 3), 28)
        title_w = max(10, width - fixed - subject_w)
        table.clear(columns=True)
        table.add_column("#", width=3, key="rank")
        table.add_column(_("Severity"), width=8, key="severity")
        if not narrow:
            table.add_column(_("Area"), width=7, key="category")
        table.add_column(_("Subject"), width=subject_w, key="subject")
        table.add_column(_("Problem"), width=title_w, key="title")
        for i, f in enumerate(self.shown):
            subject = Text(clean(f.subject).replace("\n", " "))
            subject.truncate(subject_w, overflow="ellipsis")
            title = Text(clean(f.title).replace("\n", " "))
            title.truncate(title_w, overflow="ellipsis")
            area = [] if narrow else [Text(_(category_label(f.category)))]
            table.add_row(Text(str(f.rank), justify="right"), severity_cell(f.severity, pal), *area,
                          subject, title, key=str(i))
        row = next((i for i, f in enumerate(self.shown) if keep and (f.check, f.subject) == keep), 0)
        if self.shown:
            table.move_cursor(row=row)
        self.show_detail()

    @property
    def selected(self) -> tuple[str, str] | None:
        f = self.current
        return (f.check, f.subject) if f else None

    @property
    def current(self) -> Finding | None:
        if not self.shown:
            return None
        row = self.table.cursor_row
        return self.shown[row] if 0 <= row < len(self.shown) else None

    def show_detail(self) -> None:
        f = self.current
        if f is None:
            msg = _("No finding matches these filters: press s or f to change them.") if self.result else ""
            self._static("detail").update(Text(msg, style="dim"))
            return
        self._static("detail").update(finding_text(f, self.palette))
        self.screen_stack[0].query_one("#detail-scroll", VerticalScroll).scroll_home(animate=False)

    @on(DataTable.RowHighlighted, "#table")
    def _row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self.show_detail()

    @on(DataTable.RowSelected, "#table")
    def _row_selected(self, _event: DataTable.RowSelected) -> None:
        self.action_open()

    def fill_tree(self) -> None:
        tree = self.topo_tree
        tree.clear()
        if self.result is None:
            return
        pal = self.palette

        def add(parent: TreeNode[TopoNode | None], node: TopoNode) -> None:
            mine = self.device_findings(node)
            worst = min((f.severity for f in mine), key=severity_order, default="")
            label = topo_label(node, pal, len(mine), worst)
            if node.children:
                branch = parent.add(label, data=node, expand=True)
                for child in node.children:
                    add(branch, child)
            else:
                parent.add_leaf(label, data=node)

        for top in build_topology(self.result.inventory):
            add(tree.root, top)
        if not self.result.inventory.get("topology"):
            tree.root.add_leaf(Text(_("no PCI topology in this source (no sysfs or lspci data)"), style="dim"))
        self._static("device").update(Text(_("Select a device to see its link and findings."), style="dim"))

    def device_findings(self, node: TopoNode) -> list[Finding]:
        if self.result is None or not node.names:
            return []
        return about_device(self.result.findings, node.names)

    @on(Tree.NodeHighlighted, "#tree")
    def _node_highlighted(self, event: Tree.NodeHighlighted[TopoNode | None]) -> None:
        node = event.node.data
        if node is not None:
            self._static("device").update(device_text(node, self.device_findings(node), self.palette))

    @on(Tree.NodeSelected, "#tree")
    def _node_selected(self, event: Tree.NodeSelected[TopoNode | None]) -> None:
        node = event.node.data
        mine = self.device_findings(node) if node is not None else []
        if not mine:
            self.notify(_("No finding is about this device."), markup=False)
            return
        self.severity_filter = self.category_filter = 0
        self.screen_stack[0].query_one("#views", ContentSwitcher).current = FINDINGS
        self.fill_table()
        target = next((i for i, f in enumerate(self.shown) if f is mine[0]), 0)
        self.table.move_cursor(row=target)
        self.table.focus()

    # --- actions -------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MAIN_ACTIONS and len(self.screen_stack) > 1:
            return False
        if action == "diff" and self.diff is None:
            return None
        return True

    def action_open(self) -> None:
        f = self.current
        if f is not None and self.view == FINDINGS:
            self.push_screen(FindingScreen(f, finding_text(f, self.palette, full=True)))

    def copy_fix(self, f: Finding | None) -> None:
        """Copy ``f``'s fix commands (OSC 52, and a desktop tool when present) and say so."""
        if f is None:
            self.notify(_("No finding selected."), severity="warning")
            return
        text = fix_script(f)
        if not text:
            self.notify(_("{subject}: this finding has no fix commands to copy.").format(subject=clean(f.subject)),
                        severity="warning", markup=False)
            return
        self.copy_to_clipboard(text)
        local = copy_local(text)
        n = len(f.fix.runtime) + len(f.fix.persistent)
        how = _("OSC 52 and {tool}").format(tool=local) if local else "OSC 52"
        self.notify(ngettext("{n} command for {subject} ({how}).", "{n} commands for {subject} ({how}).", n).format(
                        n=n, subject=clean(f.subject), how=how) + " "
                    + _("If paste is empty, your terminal blocks OSC 52: select them in the pane."),
                    title=_("Fix copied to clipboard"), markup=False, timeout=8)

    def action_copy(self) -> None:
        self.copy_fix(self.current if self.view == FINDINGS else None)

    def action_severity(self) -> None:
        self.severity_filter = (self.severity_filter + 1) % len(SEVERITY_FILTERS)
        self._show_findings()

    def action_category(self) -> None:
        self.category_filter = (self.category_filter + 1) % len(CATEGORY_FILTERS)
        self._show_findings()

    def _show_findings(self) -> None:
        self.screen_stack[0].query_one("#views", ContentSwitcher).current = FINDINGS
        self.fill_table()
        self.table.focus()

    @property
    def view(self) -> str:
        return self.screen_stack[0].query_one("#views", ContentSwitcher).current or FINDINGS

    def action_topology(self) -> None:
        switcher = self.screen_stack[0].query_one("#views", ContentSwitcher)
        switcher.current = TOPOLOGY if self.view == FINDINGS else FINDINGS
        (self.topo_tree if switcher.current == TOPOLOGY else self.table).focus()

    def action_rerun(self) -> None:
        self.start_run()

    def action_diff(self) -> None:
        if self.diff is not None:
            self.push_screen(DiffScreen(diff_text(self.diff, self.palette)))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_export(self) -> None:
        if self.result is None:
            self.notify(_("Nothing to export yet."), severity="warning")
            return
        exporter = self.exporter
        available = exporter.available("tui") if exporter is not None else {}
        if exporter is None or not any(available.values()):
            self.notify(_("Export not available: no report renderer (HTML, Markdown, PDF) is installed."),
                        severity="warning")
            return
        base = exporter.default_path("html", self.result.source.get("hostname"), ".", "node").removesuffix(".html")
        extensions = {fmt: exporter.FORMATS[fmt].suffixes[0][1:] for fmt in exporter.OFFERED["tui"]}
        self.push_screen(ExportScreen(base, available, extensions), self._export_chosen)

    def _export_chosen(self, choice: tuple[str, str] | None) -> None:
        if choice and self.result is not None:
            self.notify(_("Writing {format} report …").format(format=choice[0]), markup=False)
            self._export_worker(choice[0], choice[1], self.result)

    @work(thread=True, group="export")
    def _export_worker(self, fmt: str, path: str, result: Result) -> None:
        try:
            written = self.exporter.export(result, fmt, path)
        except RuntimeError as exc:
            self.call_from_thread(self.notify, clean(exc), title=_("Export failed"), severity="error", markup=False)
        else:
            self.exported.append(written)
            self.call_from_thread(self.notify, _("Wrote {path}").format(path=clean(os.path.abspath(written))),
                                  title=_("Exported"),
                                  markup=False, timeout=8)
