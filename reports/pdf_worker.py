"""Render the PDF in a forked process that loads WeasyPrint while this one runs the checks.

Loading WeasyPrint takes about 0.3 s, running the checks and building the HTML about as long; on two
cores the two overlap. :func:`start` forks (Linux only: elsewhere it returns ``None`` and the caller
renders in-process); the child imports WeasyPrint, parses the stylesheet, loads the report's fonts if
the page has not come yet, and waits for the HTML, the stylesheet's text and the files to embed on a pipe;
:meth:`PdfWorker.render` sends them and reads the PDF back. A :class:`DoctorError` in the child (WeasyPrint or Pango missing)
is raised here with its message; any other failure of the child, or a child that died, makes
:meth:`render` render in this process instead, so the result and the errors are those of the plain
path. The child never returns into the caller:
it leaves with ``os._exit``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import sys
from typing import TYPE_CHECKING

from doctor.errors import DoctorError

if TYPE_CHECKING:
    from reports.pdf import Embedded, Files

_LENGTH = struct.Struct("!Q")
#: reply tags: the PDF, a DoctorError message, any other failure (render in-process instead)
OK, DOCTOR_ERROR, FAILED = b"P", b"D", b"X"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_message(fd: int) -> bytes | None:
    head = _read_exact(fd, _LENGTH.size)
    return None if head is None else _read_exact(fd, _LENGTH.unpack(head)[0])


def _files_message(files: tuple[Embedded, ...]) -> bytes:
    """``files`` for the pipe: their count, then each one's name, description, time and data."""
    parts = [_LENGTH.pack(len(files))]
    for f in files:
        for field in (f.name.encode("utf-8"), f.description.encode("utf-8"), f.created.encode("utf-8"), f.data):
            parts += (_LENGTH.pack(len(field)), field)
    return b"".join(parts)


def _read_files(fd: int) -> tuple[Embedded, ...] | None:
    """What :func:`_files_message` sent; ``None`` when the pipe ended first."""
    from reports.pdf import Embedded

    head = _read_exact(fd, _LENGTH.size)
    if head is None:
        return None
    files: list[Embedded] = []
    for _i in range(_LENGTH.unpack(head)[0]):
        fields = [_read_message(fd) for _n in range(4)]
        if any(f is None for f in fields):
            return None
        name, description, created, data = (f or b"" for f in fields)
        files.append(Embedded(name.decode("utf-8"), data, description.decode("utf-8"), created.decode("utf-8")))
    return tuple(files)


def _child(html_fd: int, reply_fd: int) -> None:  # pragma: no cover - runs in the forked process
    import gc
    import select

    from reports import pdf

    gc.disable()  # loading makes objects that live until the end: collecting while it runs is wasted (~9 %)
    tag, payload = FAILED, b""
    try:
        pdf.import_weasyprint_single_threaded()  # this process has no other thread
        try:  # parsed while the caller runs the checks: the same text comes with the page
            from reports.print_css import report_css

            pdf.stylesheet(report_css())
        except DoctorError:
            raise
        except Exception:  # noqa: BLE001 - parsed with the page instead, where an error shows
            pass
        font_config = None
        if not select.select([html_fd], [], [], 0)[0]:  # only while waiting for the page: warming costs more
            try:  # than it saves the render (~17 ms more CPU), and the page is often there before the import ends
                font_config = pdf.warm_fonts()
            except DoctorError:
                raise
            except Exception:  # noqa: BLE001 - fonts could not be warmed: render without
                font_config = None
        gc.freeze()  # ...and need not be walked again if the collector runs
        # nor is collecting worth it while the one page is laid out (~8 %): this process ends after it,
        # and the layout's garbage cycles are a few MiB
        html = _read_message(html_fd)
        css = _read_message(html_fd)
        if html is None or css is None:  # the caller gave up (an error before the report, or no report after all)
            return

        def files() -> tuple[Embedded, ...]:  # sent while the page is laid out
            sent = _read_files(html_fd)
            if sent is None:
                raise EOFError("the caller sent no files")  # it failed making them: it meets the error itself
            return sent

        tag, payload = OK, pdf.html_to_pdf(html.decode("utf-8"), font_config=font_config,
                                           css=css.decode("utf-8") or None, files=files)
    except DoctorError as exc:
        tag, payload = DOCTOR_ERROR, str(exc).encode("utf-8", "replace")
    except BaseException:  # noqa: BLE001 - the caller renders in-process and meets the error there
        tag, payload = FAILED, b""
    with contextlib.suppress(OSError):
        _write_all(reply_fd, tag + _LENGTH.pack(len(payload)) + payload)


class PdfWorker:
    """A forked renderer; :meth:`render` once, or :meth:`close` to let it go unused."""

    def __init__(self, pid: int, html_fd: int, reply_fd: int) -> None:
        self.pid, self._html_fd, self._reply_fd = pid, html_fd, reply_fd

    def render(self, html: str, css: str | None = None, files: Files = ()) -> bytes:
        """PDF bytes for ``html`` (and ``css`` and ``files``, see :func:`reports.pdf.html_to_pdf`), from the child
        when it can, else rendered here. A function making ``files`` is called once the child has the page,
        so that it runs while the child lays the page out."""
        reply: bytes | None = None
        try:
            page, sheet = html.encode("utf-8"), (css or "").encode("utf-8")
            with contextlib.suppress(OSError):  # the child is gone (it still may have written why)
                _write_all(self._html_fd, _LENGTH.pack(len(page)) + page + _LENGTH.pack(len(sheet)) + sheet)
            files = files() if callable(files) else files
            with contextlib.suppress(OSError):
                _write_all(self._html_fd, _files_message(files))
            os.close(self._html_fd)
            self._html_fd = -1
            head = _read_exact(self._reply_fd, 1 + _LENGTH.size)
            if head is not None:
                reply = _read_exact(self._reply_fd, _LENGTH.unpack(head[1:])[0])
                if reply is not None and head[:1] == DOCTOR_ERROR:
                    raise DoctorError(reply.decode("utf-8", "replace"))
                if head[:1] != OK:
                    reply = None
        finally:
            self.close()
        if reply is None:
            from reports.pdf import html_to_pdf

            return html_to_pdf(html, css=css, files=files)
        return reply

    def close(self) -> None:
        """Close the pipes and reap the child; one that was never sent a page is killed, not waited for."""
        if self._html_fd >= 0 and self.pid:  # unused (an error before the report): no need to let it finish loading
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        for name in ("_html_fd", "_reply_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)
        if self.pid:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = 0


def start() -> PdfWorker | None:
    """Fork a renderer (Linux, single-threaded caller); ``None`` where forking is not safe or not possible."""
    import threading

    if not sys.platform.startswith("linux") or threading.active_count() > 1:  # a fork copies no other thread
        return None
    html_read, html_write = os.pipe()
    reply_read, reply_write = os.pipe()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
    except OSError:
        for fd in (html_read, html_write, reply_read, reply_write):
            os.close(fd)
        return None
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.close(html_write)
            os.close(reply_read)
            _child(html_read, reply_write)
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(html_read)
    os.close(reply_write)
    return PdfWorker(pid, html_write, reply_read)


