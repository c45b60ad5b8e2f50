"""Shortcuts for WeasyPrint's slowest paths on our reports; each falls back to WeasyPrint's own code.

* SVG text: WeasyPrint lays out and draws an SVG ``<text>`` one letter at a time (a Pango layout per
  letter: the 1,700 letters of an 8-GPU topology cost more than the rest of its page). A ``<text>``
  with one ``x``/``y`` and no per-letter placement (``dx``, ``dy``, ``rotate``, ``textLength``,
  ``letter-spacing``) is laid out and drawn as one run here: same position, same font, same anchor
  handling (the caller's, unchanged); glyphs keep the font's kerning.
* cffi declarations: WeasyPrint declares Pango's, HarfBuzz's and GObject's C API to cffi at import
  (16 KB of C parsed by pycparser: 0.05-0.1 s, a fifth of the renderer's start-up, and pycparser's own
  import). :func:`stored_declarations` restores the parser's state from
  ``templates/weasyprint-cdef.pickle``, written by ``python -m reports.weasyprint_speed`` from a fresh
  parse of the very text, when its key (the text, cffi's and Python's versions, hashed) is that of
  the text WeasyPrint declares; else cffi parses as usual. pycparser is then imported only if a type
  string needs it.
* cffi types: ``ffi.new("PangoRectangle *")`` and the like parse their type string with pycparser,
  prefixed by a ``typedef`` for each of the hundreds of declared names: 5-10 ms per new string, and
  the font subsetter asks for ``hb_codepoint_t[N]`` with a new N per font. Declared types, pointers to
  and arrays of them are built from the declaration directly.

* User-agent stylesheet: WeasyPrint's gives every element a ``::marker``, two ``::footnote-*`` and
  three ``::note-*`` pseudo-elements (universal selectors), so it computes seven styles per element.
  :func:`report_html_class` returns an ``HTML`` whose user-agent sheet is WeasyPrint's own with the
  footnote and note rules left out (the report has neither) and ``::marker`` kept for ``li`` and
  ``summary`` only; the pages come out the same, pixel for pixel.

* Text drawing: WeasyPrint's ``draw_first_line`` reads every glyph's fields through cffi, one
  attribute at a time (a third of painting). :func:`_fast_draw_first_line` reads each glyph run's
  array at once with ``struct`` and writes the same text operators; a line with anything unusual
  (ellipsis, emoji or bitmap fonts, missing or empty glyphs, raised glyphs) is drawn by WeasyPrint's
  own function. The PDF comes out byte for byte the same.

* HTML parsing: tinyhtml5's ``chars_until`` caches its regular expressions under a key it never
  looks up again (``characters = cache[key] = regex`` rebinds ``characters`` first), so every call
  builds its pattern anew, a third of parsing the report. The cache is replaced by a dict that builds
  the same pattern once per key on a miss.

* PDF streams: pydyf deflates every stream at level 9, a sixth of writing the PDF; level 6 takes a
  quarter of that time for a file 2-3 % larger (91 KiB instead of 89 for the sick report).

* fontTools: WeasyPrint imports ``fontTools.subset`` and ``fontTools.varLib.instancer`` at start-up
  (110 modules, 0.08 s) for fonts HarfBuzz cannot subset, variable fonts and emoji fonts; the
  report's fonts need neither. :func:`defer_font_tools`, called before WeasyPrint is imported,
  puts stand-ins in ``sys.modules`` that import the real module the first time anything is used
  (WeasyPrint's ``instantiateVariableFont`` is a function that does so when called).
  Pillow is deferred alike (``PIL.Image``, ``ImageCms``, ``ImageOps``, ``ImageFile``, ``EpsImagePlugin``: 0.05 s
  at start-up): WeasyPrint needs it for raster images, colour profiles and emoji only, and a report has none
  (its fetcher refuses every image). The settings WeasyPrint makes on import (no Ghostscript for EPS, truncated
  images loaded) are kept and made on the real module when it loads.

* Line breaking: a report repeats many text runs exactly (labels, headings, severities, the page
  margin texts on every page, table headers). WeasyPrint's ``split_first_line`` lays each out with
  Pango anew. :func:`_memo_split_first_line` keeps its result per layout (the ``LayoutContext``),
  keyed by the text, every style value the function and the Pango layout it builds read, the font
  configuration, the width and the flags; a repeat gets the same lengths and sizes and a copy of the
  (deactivated) layout object, which holds only the line's text and a few numbers until drawing
  sets it up again from the box's own style. The PDF comes out byte for byte the same.

* Struts: WeasyPrint's ``strut`` (the line height and baseline of a style's font, 2,500 calls a
  report) keys its cache with ``str()`` of a tuple of fourteen font values, built anew on every
  call. :func:`_fast_strut` keys its own cache per font configuration with the same values, as a
  tuple; a miss, or a value that cannot be hashed, asks WeasyPrint's ``strut``.

* Font descriptions: every Pango layout WeasyPrint sets up (one per line laid out or drawn) builds a
  new ``PangoFontDescription`` from seven style values. Pango copies the description into the
  layout, so :func:`_shared_font_description` hands out one per set of values.

* Repeated text: :func:`_memo_draw_text` draws a text box whose text and font are those of one drawn
  earlier in the document by replaying the text operators recorded then (fonts, sizes, glyph strings)
  at its own position and colour: no Pango layout is set up again for it. Same bytes.

* Pango contexts: WeasyPrint's ``Layout.setup`` creates a Pango context for every layout (one per
  line laid out or drawn). :func:`_shared_context_setup` gives layouts of the same font
  configuration and style values one context, set up as WeasyPrint sets it up; text with font
  features or a decoration is set up by WeasyPrint's own ``setup``.

* Page margin boxes: WeasyPrint computes the styles of all sixteen margin boxes anew for every page
  (a page's type holds its index), a twentieth of a report's time. :func:`_shared_margin_styles`
  gives a page the margin box styles of an earlier page whose page and margin box declarations are
  the very same (the computed values cannot differ); WeasyPrint changes such a style per page only
  by normalising its counter properties, which gives the same values again.

* Used lengths: WeasyPrint's ``resolve_percentages`` (4,400 calls a report) resolves fourteen
  properties through two calls each. :func:`_fast_resolve_percentages` does the same in one loop,
  with ``percentage``'s own arithmetic for pixels and percentages and ``percentage`` itself for
  anything else (``calc()``). The used lengths of a box follow from its style's values of these
  properties, its borders and ``box-sizing``, and the containing block's size: the values set for one
  box are kept per those (outside collapsed tables and ``calc()``) and given to the next alike box at once
  (nine boxes in ten in a report).

* Kept layouts: WeasyPrint frees a line's Pango layout once the line is laid out and, to draw the line,
  builds it again (a context, the text, its attributes) and Pango shapes the text a second time.
  :func:`_keep_layouts` keeps the laid-out Pango layout with the line; drawing takes it when the
  line's style values, font configuration and text are those it was laid out with and no
  justification spacing was added: the same text, attributes and font as WeasyPrint would set up
  again (a line that fitted its width holds the same one line as a layout without a width). Lines are laid
  out in Pango's single-paragraph mode (what drawing sets) when their text holds no paragraph
  separator, where the mode changes nothing, so the kept lines need no new shaping. Lines with a
  decoration, and anything else, are set up again by WeasyPrint. Same bytes.

* Flow tests: ``Box.is_in_normal_flow`` (21,000 calls a report) asks five methods in turn;
  :func:`_fast_in_normal_flow` reads the same two style values once. pydyf's ``_to_bytes`` (38,000
  calls: every operand of every drawing operator) formats each float anew; :func:`_fast_to_bytes`
  keeps the bytes of a float once made and takes the common types first. Same bytes.

``install()`` puts the shortcuts in place once WeasyPrint is imported (the fontTools and Pillow stand-ins and
the stored cffi declarations act while it is imported: :func:`defer_font_tools`, :func:`stored_declarations`).
It is idempotent, and each shortcut checks that WeasyPrint's internals look as expected; when they do not
(another WeasyPrint version), it changes nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import struct
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

_installed: list[bool] = []

#: What the shortcuts' code fingerprints and the stored cffi declarations were taken from. With other versions a
#: shortcut whose fingerprint differs stays off (WeasyPrint's own code runs) and the tests that need them on skip.
TUNED_FOR = {"python": "3.11", "weasyprint": "70.0", "pydyf": "0.13.0", "cffi": "2.1.1", "tinyhtml5": "2.1.0"}


def untuned_versions() -> list[str]:
    """``name version`` of each installed library (and Python) that differs from :data:`TUNED_FOR`."""
    from importlib import metadata

    found = {"python": "{}.{}".format(*sys.version_info[:2])}
    for name in TUNED_FOR:
        if name != "python":
            try:
                found[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                found[name] = "absent"
    return [f"{name} {found[name]}" for name, want in TUNED_FOR.items() if found[name] != want]


#: ``NAME``, ``NAME *``, ``NAME[]`` and ``NAME[123]`` with a declared or primitive ``NAME``
_SIMPLE_TYPE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*(?: [A-Za-z_][A-Za-z0-9_]*)*)\s*(\*|\[(\d*)\])?\s*")
_PER_LETTER = ("dx", "dy", "rotate", "textLength", "lengthAdjust", "letter-spacing", "direction")


def install() -> None:
    """Install both shortcuts once (no-op when WeasyPrint's internals differ from what they expect)."""
    if _installed:
        return
    _installed.append(True)
    _install_svg_text()
    _install_cffi_types()
    _install_draw_text()
    _install_html_parser()
    _install_stream_level()
    _install_line_memo()
    _install_strut()
    _install_font_descriptions()
    _install_shared_contexts()
    _install_shared_margin_styles()
    _install_percentages()
    _install_kept_layouts()
    _install_normal_flow()
    _install_to_bytes()


#: modules WeasyPrint imports at start-up for rare fonts and images only, and the names it imports from them
#: (classes and functions, called through a forwarder)
_DEFERRED = {"fontTools.subset": (), "fontTools.varLib.instancer": ("instantiateVariableFont",),
             "PIL.Image": (), "PIL.ImageCms": ("ImageCmsProfile",), "PIL.ImageOps": (), "PIL.ImageFile": (),
             "PIL.EpsImagePlugin": ()}


#: module attributes a stand-in answers from the real module: a version, ``import *``
_FORWARDED_DUNDERS = frozenset({"__version__", "__all__"})


class _Deferred(types.ModuleType):
    """Stands in for a module until an attribute is read, then imports the real one and answers from it.

    Attributes set on it before then (WeasyPrint's ``EpsImagePlugin.gs_binary = False``) are set on the real
    module as it loads; after, they are set on the real module directly. A ``_package`` stand-in loads the real
    package when a submodule is imported (which reads ``__path__``; so does ``from PACKAGE import NAME``).
    """

    _package = False

    def _real(self) -> types.ModuleType:
        import importlib
        import sys

        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        real = importlib.import_module(self.__name__)
        pending = self.__dict__.pop("_gnd_pending", None)
        self.__dict__["_gnd_loaded"] = True
        for name, value in (pending or {}).items():
            setattr(real, name, value)
        return real

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name not in _FORWARDED_DUNDERS and not (name == "__path__" and self._package):
            raise AttributeError(name)  # ``__spec__``: asked by every import statement, ``__path__`` by ``from``
        pending = self.__dict__.get("_gnd_pending")
        if pending and name in pending:
            return pending[name]
        return getattr(self._real(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__"):
            super().__setattr__(name, value)
        elif self.__dict__.get("_gnd_loaded"):
            setattr(self._real(), name, value)
        else:
            self.__dict__.setdefault("_gnd_pending", {})[name] = value


def defer_font_tools() -> list[str]:
    """Install the fontTools stand-ins (see the module docstring) unless WeasyPrint or they are imported already.

    Returns the names of the modules now deferred.
    """
    import importlib
    import sys
    from importlib.util import find_spec
    from pathlib import Path

    if "weasyprint" in sys.modules:
        return []
    deferred = []
    for package in ("fontTools", "PIL"):
        names = [name for name in _DEFERRED if name.startswith(package + ".")]
        if any(name in sys.modules for name in names):
            continue  # imported already: nothing to save
        try:
            spec = find_spec(package)
        except (ImportError, ValueError):
            continue
        roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
        for name in names:
            relative = Path(*name.split(".")[1:])
            if not any((root / relative / "__init__.py").is_file() or (root / relative).with_suffix(".py").is_file()
                       for root in roots):
                continue  # absent or elsewhere: WeasyPrint's own import says what is wrong
            module = _Deferred(name)
            for function in _DEFERRED[name]:
                module.__dict__[function] = _forwarder(module, function)
            sys.modules[name] = module
            parent, _dot, child = name.rpartition(".")
            if parent == package:  # ``import PIL.Image; PIL.Image.open`` finds it (the package itself is small)
                setattr(importlib.import_module(parent), child, module)
            deferred.append(name)
    return deferred


def forget_forwarders() -> None:
    """After WeasyPrint's import: later importers of a deferred module get the real one's names."""
    import sys

    for name, functions in _DEFERRED.items():
        module = sys.modules.get(name)
        if isinstance(module, _Deferred):
            for function in functions:
                module.__dict__.pop(function, None)


def _forwarder(module: _Deferred, name: str) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        return getattr(module._real(), name)(*args, **kwargs)

    forward.__name__ = name
    return forward


def _replace_in(modules: Iterable[Any], name: str, original: Any, replacement: Any) -> None:
    """Put ``replacement`` (which remembers ``original``) in place of ``original`` wherever one of
    ``modules`` holds it under ``name`` (modules that imported it by name have their own reference)."""
    replacement.original = original
    for module in modules:
        if getattr(module, name, None) is original:
            setattr(module, name, replacement)


def _install_svg_text() -> None:
    import importlib

    try:
        svg_module = importlib.import_module("weasyprint.svg")
        text_module = importlib.import_module("weasyprint.svg.text")  # the package's ``text`` is the function
    except ImportError:
        return
    original = getattr(text_module, "text", None)
    tags = getattr(svg_module, "TAGS", None)
    if not callable(original) or getattr(svg_module, "text", None) is not original or not isinstance(tags, dict):
        return
    if not all(hasattr(text_module, name) for name in ("Style", "TextBox", "extend_bounding_box", "size",
                                                       "normalize")):
        return
    fallback = cast("Callable[..., Any]", original)

    def text(svg: Any, node: Any, font_size: float) -> Any:
        if not _single_run(node):
            return fallback(svg, node, font_size)
        return _draw_single_run(text_module, svg, node, font_size)

    text.original = original  # type: ignore[attr-defined]
    setattr(svg_module, "text", text)  # noqa: B010 - draw_node compares TAGS entries with this name
    for tag, function in list(tags.items()):
        if function is original:
            tags[tag] = text


def _single_run(node: Any) -> bool:
    """Whether ``node`` is a ``<text>`` WeasyPrint would place letter by letter without need."""
    if node.tag != "text" or not node.text or "\n" in node.text:
        return False
    attrib = node.attrib
    if any(name in attrib for name in _PER_LETTER):
        return False
    return all(" " not in str(attrib.get(name, "")).strip() and "," not in str(attrib.get(name, ""))
               for name in ("x", "y"))


def _draw_single_run(text_module: Any, svg: Any, node: Any, font_size: float) -> None:
    """WeasyPrint's ``svg.text.text`` for one run: one layout, one draw (see the module docstring)."""
    from weasyprint.css.properties import INITIAL_VALUES
    from weasyprint.draw.text import draw_emojis, draw_first_line
    from weasyprint.matrix import Matrix
    from weasyprint.text.line_break import split_first_line

    style = text_module.Style()
    style.update(INITIAL_VALUES)
    style.font_config = svg.font_config
    # a tuple, not WeasyPrint's list: the same families, and labels alike are laid out once (see the line memo)
    style["font_family"] = tuple(font.strip("\"'") for font in node.get("font-family", "sans-serif").split(","))
    style["font_style"] = node.get("font-style", "normal")
    weight = node.get("font-weight", 400)
    if weight == "normal":
        weight = 400
    elif weight == "bold":
        weight = 700
    else:
        try:
            weight = int(weight)
        except ValueError:
            weight = 400
    style["font_weight"] = weight
    style["font_size"] = font_size

    layout, _, _, width, height, baseline = split_first_line(node.text, style, svg.context, float("inf"), 0)
    x = y = None
    if "x" in node.attrib:
        x = text_module.size(text_module.normalize(node.attrib["x"]).strip(), font_size, svg.inner_width)
    if "y" in node.attrib:
        y = text_module.size(text_module.normalize(node.attrib["y"]).strip(), font_size, svg.inner_height)

    ascent, descent = font_size * 0.8, font_size * 0.2
    y_align = 0.0
    display_anchor = node.get("display-anchor")
    alignment_baseline = node.get("dominant-baseline", node.get("alignment-baseline"))
    if display_anchor == "middle":
        y_align = -height / 2
    elif display_anchor == "top":
        pass
    elif display_anchor == "bottom":
        y_align = -height
    elif alignment_baseline in ("central", "middle"):
        y_align = (ascent + descent) / 2 - descent
    elif alignment_baseline in ("text-before-edge", "before_edge", "top", "hanging", "text-top"):
        y_align = ascent
    elif alignment_baseline in ("text-after-edge", "after_edge", "bottom", "text-bottom"):
        y_align = -descent

    if x is not None:
        svg.cursor_d_position[0] = 0
    if y is not None:
        svg.cursor_d_position[1] = 0
    x = svg.cursor_position[0] if x is None else x
    y = svg.cursor_position[1] if y is None else y
    svg.cursor_position = x + width, y
    x_position = x + svg.cursor_d_position[0]
    y_position = y + svg.cursor_d_position[1] + y_align
    points = ((x_position, y_position - baseline), (x_position + width, y_position - baseline + height))
    node.text_bounding_box = text_module.extend_bounding_box(node.text_bounding_box, points)

    svg.stream.push_state()
    fill, stroke = svg.set_graphical_state(node, font_size)
    svg.stream.begin_text()
    layout.reactivate(style)
    svg.fill_stroke(fill, stroke, text=True)
    text_box = text_module.TextBox(layout, style)
    text_box.baseline = baseline
    emojis = draw_first_line(svg.stream, text_box, "none", "none", Matrix(a=1, d=-1, e=x_position, f=y_position))
    svg.stream.end_text()
    svg.stream.pop_state()
    draw_emojis(svg.stream, style, x, y, emojis)


def _install_cffi_types() -> None:
    """Give WeasyPrint's and its font subsetter's ``FFI`` objects the type shortcut."""
    try:
        from weasyprint.text import ffi as text_ffi
    except ImportError:
        return
    for ffi in {id(f): f for f in (getattr(text_ffi, "ffi", None),) if f is not None}.values():
        _shortcut_types(ffi)


def _shortcut_types(ffi: Any) -> None:
    parser: Any = getattr(ffi, "_parser", None)
    parse_type = getattr(parser, "parse_type", None)
    declarations = getattr(parser, "_declarations", None)
    if parse_type is None or not isinstance(declarations, dict):
        return
    try:
        from cffi import model
    except ImportError:
        return
    primitives = getattr(model.PrimitiveType, "ALL_PRIMITIVE_TYPES", {})

    def fast_parse_type(cdecl: str) -> Any:
        match = _SIMPLE_TYPE.fullmatch(cdecl) if isinstance(cdecl, str) else None
        if match:
            name, suffix, length = match.groups()
            declared = declarations.get("typedef " + name)
            base = declared[0] if declared else model.PrimitiveType(name) if name in primitives else None
            if base is not None:
                if not suffix:
                    return base
                if suffix == "*":
                    return model.PointerType(base)
                return model.ArrayType(base, int(length) if length else None)
        return parse_type(cdecl)

    fast_parse_type.original = parse_type  # type: ignore[attr-defined]
    parser.parse_type = fast_parse_type


#: pseudo-elements of universal user-agent rules a report never shows
_UNUSED_PSEUDO = frozenset({"footnote-call", "footnote-marker", "note-call", "note-marker", "note-callback"})
#: elements that keep the user-agent's ``::marker`` rule
_MARKED = ("li", "summary")
_html_class: list[Any] = []


def report_html_class(weasyprint: Any) -> Any:
    """``weasyprint.HTML``, or a subclass with the lean user-agent sheet (see the module docstring)."""
    if not _html_class:
        _html_class.append(_lean_html_class(weasyprint))
    return _html_class[0]


def _lean_html_class(weasyprint: Any) -> Any:
    import copy

    base = weasyprint.HTML
    try:
        from weasyprint.html import UA_STYLESHEET
        matcher = UA_STYLESHEET.matcher
        other = list(matcher.other_selectors)
        names = matcher.lower_local_name_selectors
        if not callable(getattr(base, "_ua_stylesheets", None)) or not all(len(e) == 5 for e in other):
            return base
    except (ImportError, AttributeError, TypeError):
        return base
    markers = [e for e in other if e[3] == "marker"]
    lean_matcher = copy.copy(matcher)
    lean_matcher.other_selectors = [e for e in other if e[3] not in _UNUSED_PSEUDO and e[3] != "marker"]
    lean_matcher.lower_local_name_selectors = {**names}
    for name in _MARKED:
        lean_matcher.lower_local_name_selectors[name] = sorted([*names.get(name, []), *markers],
                                                               key=lambda e: e[2])  # keep the rules' order
    lean = copy.copy(UA_STYLESHEET)
    lean.matcher = lean_matcher

    class ReportHTML(base):  # type: ignore[misc, valid-type]
        """WeasyPrint's ``HTML`` with the lean user-agent sheet."""

        def _ua_stylesheets(self, forms: bool = False) -> list[Any]:
            sheets = list(base._ua_stylesheets(self, forms))
            return [lean if sheet is UA_STYLESHEET else sheet for sheet in sheets]

    return ReportHTML


#: fingerprint of the names and strings of the ``draw_first_line`` the fast path copies (WeasyPrint 70)
_DRAW_FIRST_LINE = "11d7cf18742c81e4"
#: ``PangoGlyphInfo``: glyph, geometry (width, x_offset, y_offset), visual attributes
_GLYPH_INFO = struct.Struct("=Iiiii")


def code_fingerprint(function: Any) -> str:
    """A short hash of the global and attribute names and the string constants of ``function``'s code."""
    code = function.__code__
    strings = [c for c in code.co_consts if isinstance(c, str)]
    return hashlib.sha256(repr((sorted(code.co_names), strings)).encode()).hexdigest()[:16]


def _install_draw_text() -> None:
    try:
        from weasyprint.draw import text as draw_text
    except ImportError:
        return
    original = getattr(draw_text, "draw_first_line", None)
    ffi = getattr(draw_text, "ffi", None)
    if original is None or ffi is None or code_fingerprint(original) != _DRAW_FIRST_LINE:
        return
    try:
        layout_ok = (ffi.sizeof("PangoGlyphInfo") == _GLYPH_INFO.size and ffi.offsetof("PangoGlyphInfo", "geometry") == 4
                     and [ffi.offsetof("PangoGlyphGeometry", f) for f in ("width", "x_offset", "y_offset")] == [0, 4, 8]
                     and ffi.sizeof("PangoGlyph") == 4)
    except (AttributeError, TypeError, ValueError, KeyError):  # a type cffi does not know: leave it
        return
    pango = getattr(draw_text, "pango", None)
    if not layout_ok or getattr(pango, "PANGO_GLYPH_UNKNOWN_FLAG", None) != getattr(pango, "PANGO_GLYPH_EMPTY", 0) + 1:
        return
    recorder = _Recorder()
    fast = _fast_draw_first_line(draw_text, original, recorder)
    fast.original = original  # type: ignore[attr-defined]
    draw_text.draw_first_line = fast
    _install_draw_memo(draw_text, recorder)


#: fingerprint of WeasyPrint 70's ``draw_text``, whose plain path :func:`_memo_draw_text` replays
_DRAW_TEXT = "b5de47a97bd9398e"


class _Recorder(threading.local):
    """Per thread (documents drawn in two threads keep apart): ``ops``, the text operators being recorded (a list),
    ``False`` once WeasyPrint's own ``draw_first_line`` drew the line, ``None`` when not recording; ``document``,
    the fonts of the document last drawn (its ``Stream._fonts``) and its recorded lines."""

    ops: Any = None
    document: Any = None


def _install_draw_memo(module: Any, recorder: _Recorder) -> None:
    import importlib

    original = getattr(module, "draw_text", None)
    if not callable(original) or code_fingerprint(original) != _DRAW_TEXT or not hasattr(module, "Matrix"):
        return
    try:
        draw = importlib.import_module("weasyprint.draw")
    except ImportError:
        return
    memo = _memo_draw_text(module, cast("Callable[..., Any]", original), recorder)
    _replace_in((module, draw), "draw_text", original, memo)


def _fast_draw_first_line(module: Any, original: Callable[..., Any],
                          recorder: _Recorder | None = None) -> Callable[..., Any]:
    """WeasyPrint's ``draw_first_line`` (``weasyprint/draw/text.py``) for plain lines, glyph arrays read at once.

    ``recorder``: while its ``ops`` is a list, the text operators of a line drawn here are appended to it
    (``(font, size)`` pairs and strings, see :func:`_memo_draw_text`); a line WeasyPrint's own function draws
    sets it to ``False``.
    """
    recording = recorder if recorder is not None else _Recorder()

    def fallback(stream: Any, textbox: Any, text_overflow: str, block_ellipsis: Any, matrix: Any) -> Any:
        if recording.ops is not None:
            recording.ops = False
        return original(stream, textbox, text_overflow, block_ellipsis, matrix)

    ffi, pango, from_units = module.ffi, module.pango, module.FROM_UNITS
    null = ffi.NULL
    empty = pango.PANGO_GLYPH_EMPTY  # PANGO_GLYPH_UNKNOWN_FLAG is the next bit: ids at or above it are unknown
    set_single_paragraph_mode = pango.pango_layout_set_single_paragraph_mode
    get_glyph_extents = pango.pango_font_get_glyph_extents
    old_pango = pango.pango_version() < 14802
    unpack_from, size = struct.unpack_from, _GLYPH_INFO.size

    def draw_first_line(stream: Any, textbox: Any, text_overflow: str, block_ellipsis: Any, matrix: Any) -> Any:
        if text_overflow == "ellipsis" or block_ellipsis != "none":
            return fallback(stream, textbox, text_overflow, block_ellipsis, matrix)
        if not textbox.text.strip():
            return []
        if textbox.style["font_size"] < 1e-6:
            return []
        set_single_paragraph_mode(textbox.pango_layout.layout, True)
        first_line, _index = textbox.pango_layout.get_first_line()

        runs = []  # (pango font, font, size, glyph item, glyph string, (glyph, width, x offset) per glyph)
        font: Any = None
        size_of_font: Any = None
        scanned_font: Any = None
        run = first_line.runs[0]
        while run != null:
            glyph_item = run.data
            run = run.next
            glyph_string = glyph_item.glyphs
            pango_font = glyph_item.item.analysis.font
            if pango_font != scanned_font:  # fonts added in WeasyPrint's order
                scanned_font = pango_font
                font, size_of_font = stream.add_font(pango_font)
            count = glyph_string.num_glyphs
            fields = unpack_from(f"={5 * count}i", ffi.buffer(glyph_string.glyphs, count * size))
            glyph_ids = fields[0::5]
            if (font.svg or font.png or font.colr or font.bitmap or any(fields[3::5])  # emoji, bitmap, raised
                    or (count and (max(glyph_ids) >= empty or min(glyph_ids) < 0))):  # empty, unknown, invalid
                return fallback(stream, textbox, text_overflow, block_ellipsis, matrix)
            runs.append((pango_font, font, size_of_font, glyph_item, glyph_string,
                         list(zip(glyph_ids, fields[1::5], fields[2::5]))))

        stream.set_text_matrix(*matrix.values)
        operators = recording.ops if isinstance(recording.ops, list) else None
        previous_pango_font = None
        string = ""
        font_size = 0.0
        for pango_font, font, size_of_font, glyph_item, glyph_string, glyphs in runs:  # noqa: B007
            utf8_text = None
            num_glyphs = len(glyphs)
            if pango_font != previous_pango_font:
                previous_pango_font = pango_font
                font_size = size_of_font
                if old_pango:
                    font_size = textbox.style["font_size"]
                if string:
                    stream.show_text(string)
                    if operators is not None:
                        operators.append(string)
                string = ""
                stream.set_font_size(font.hash, font_size)
                if operators is not None:
                    operators.append((font.hash, font_size))
            widths, to_unicode = font.widths, font.to_unicode
            by_size = font.__dict__.setdefault("_gnd_fragments", {})
            cache = by_size.get(font_size)
            if cache is None:
                cache = by_size[font_size] = {}
            parts = list(map(cache.get, glyphs))  # a glyph's text operands, once per font and size
            if None in parts:
                for i, (glyph_id, width, x_offset) in enumerate(glyphs):
                    if parts[i] is not None:
                        continue
                    if glyph_id not in to_unicode:
                        item = glyph_item.item
                        clusters = glyph_string.log_clusters
                        offset = item.offset
                        t1 = clusters[i]
                        if item.analysis.level % 2:  # rtl
                            t2 = item.length if i == 0 else clusters[i - 1]
                        else:
                            t2 = item.length if i == num_glyphs - 1 else clusters[i + 1]
                        utf8_text = utf8_text or textbox.pango_layout.text.encode()
                        to_unicode[glyph_id] = utf8_text[offset + t1:offset + t2].decode()
                    offset = x_offset / font_size
                    fragment = f">{-offset}<{glyph_id:04x}" if offset else f"{glyph_id:04x}"
                    logical_width = widths.get(glyph_id)
                    if logical_width is None:
                        get_glyph_extents(pango_font, glyph_id, stream.ink_rect, stream.logical_rect)
                        logical_width = widths[glyph_id] = round(
                            stream.logical_rect.width * 1000 * from_units / font_size)
                    kerning = logical_width + offset - width * 1000 * from_units / font_size
                    if kerning:
                        fragment += f">{int(kerning)}<"
                    parts[i] = cache[glyphs[i]] = fragment
            string += "<" + "".join(parts)  # type: ignore[arg-type]
            if string[-1] == "<":
                string = string[:-1]
            else:
                string += ">"
        stream.show_text(string)
        if operators is not None:
            operators.append(string)
        return []

    return draw_first_line


#: fingerprint of tinyhtml5 2.x ``HTMLUnicodeInputStream.chars_until``, whose cache is fixed here
_CHARS_UNTIL = "afea0270621fbcbd"


class _UntilPatterns(dict):  # type: ignore[type-arg]
    """tinyhtml5's ``characters_until_regex``, built on a miss as ``chars_until`` builds it, kept under its key."""

    def __missing__(self, key: tuple[Any, bool]) -> re.Pattern[str]:
        characters, opposite = key
        regex = "".join([f"\\x{ord(character):02x}" for character in characters])
        if not opposite:
            regex = f"^{regex}"
        pattern = self[key] = re.compile(f"[{regex}]+")
        return pattern


def _install_html_parser() -> None:
    try:
        from tinyhtml5 import inputstream
    except ImportError:
        return
    stream_class = getattr(inputstream, "HTMLUnicodeInputStream", None)
    chars_until = getattr(stream_class, "chars_until", None)
    cache = getattr(inputstream, "characters_until_regex", None)
    if type(cache) is not dict or chars_until is None or code_fingerprint(chars_until) != _CHARS_UNTIL:
        return
    inputstream.characters_until_regex = _UntilPatterns()


#: deflate level of the PDF's streams (pydyf's own: 9)
STREAM_LEVEL = 6


class _Deflate:
    """The ``zlib`` pydyf sees: ``compressobj`` at :data:`STREAM_LEVEL` at most, everything else zlib's own."""

    def __getattr__(self, name: str) -> Any:
        import zlib

        return getattr(zlib, name)

    @staticmethod
    def compressobj(level: int = -1, *args: Any, **kwargs: Any) -> Any:
        import zlib

        return zlib.compressobj(min(level, STREAM_LEVEL) if level >= 0 else level, *args, **kwargs)


def _install_stream_level() -> None:
    import zlib

    try:
        import pydyf
    except ImportError:
        return
    stream_class = getattr(pydyf, "Stream", None)
    data = getattr(getattr(stream_class, "data", None), "fget", None)
    if getattr(pydyf, "zlib", None) is not zlib or data is None or "compressobj" not in data.__code__.co_names:
        return
    pydyf.zlib = _Deflate()


#: fingerprint of the line-breaking functions whose results the memo keeps (WeasyPrint 70): ``split_first_line``
#: and what it calls with the style (see :func:`_line_functions`)
_LINE_CODE = "3170653fff6cf21a"
#: every style value those functions read (their string constants, checked by the fingerprint)
_LINE_STYLE = (
    "direction", "font_family", "font_feature_settings", "font_kerning", "font_language_override", "font_size",
    "font_stretch", "font_style", "font_variant_alternates", "font_variant_caps", "font_variant_east_asian",
    "font_variant_ligatures", "font_variant_numeric", "font_variant_position", "font_variation_settings",
    "font_weight", "hyphenate_character", "hyphenate_limit_chars", "hyphenate_limit_zone", "hyphens", "lang",
    "letter_spacing", "overflow_wrap", "tab_size", "text_decoration_line", "white_space", "word_break",
    "word_spacing")


def _line_functions() -> list[Any]:
    """The functions whose code decides what ``split_first_line`` returns, in a fixed order."""
    from weasyprint.layout import percent
    from weasyprint.text import fonts, line_break

    layout = line_break.Layout
    functions = [line_break.split_first_line, line_break.first_line_metrics, line_break.create_layout,
                 layout.__init__, layout.setup, layout.set_text, layout.set_tabs, layout.deactivate,
                 line_break.line_size, fonts.get_font_description, percent.percentage]
    return [getattr(function, "original", function) for function in functions]  # WeasyPrint's, not the shortcuts


def line_code_fingerprint() -> str:
    """One fingerprint (see :func:`code_fingerprint`) of :func:`_line_functions`."""
    return hashlib.sha256(repr([code_fingerprint(f) for f in _line_functions()]).encode()).hexdigest()[:16]


def _install_line_memo() -> None:
    try:
        from weasyprint.layout import inline, preferred
        from weasyprint.text import line_break

        if line_code_fingerprint() != _LINE_CODE:
            return
    except (ImportError, AttributeError):
        return
    original = line_break.split_first_line
    memo = _memo_split_first_line(original)
    _replace_in((line_break, inline, preferred), "split_first_line", original, memo)


def _memo_split_first_line(original: Callable[..., Any]) -> Callable[..., Any]:
    """``split_first_line`` answered from a memo per layout context (see the module docstring)."""
    import operator

    style_values = operator.itemgetter(*_LINE_STYLE)
    new = object.__new__

    def clone(layout: Any) -> Any:  # ``copy.copy`` of the deactivated layout, without the pickle protocol's detour
        twin = new(type(layout))
        twin.__dict__.update(layout.__dict__)
        return twin

    def split_first_line(text: str, style: Any, context: Any, max_width: Any, justification_spacing: Any,
                         is_line_start: bool = True, minimum: bool = False) -> Any:
        try:
            lines = context._gnd_first_lines
        except AttributeError:
            try:
                lines = context._gnd_first_lines = {}
            except AttributeError:  # no context (or one without attributes): nothing to keep it in
                return original(text, style, context, max_width, justification_spacing, is_line_start, minimum)
        try:
            key = (text, style_values(style), style.font_config, max_width, justification_spacing, is_line_start,
                   minimum)
            found = lines.get(key)
        except (AttributeError, KeyError, TypeError):  # a style without these values, or an unhashable one
            return original(text, style, context, max_width, justification_spacing, is_line_start, minimum)
        if found is None:
            result = original(text, style, context, max_width, justification_spacing, is_line_start, minimum)
            lines[key] = (clone(result[0]), *result[1:])  # the caller's own may be changed when it is drawn
            return result
        return (clone(found[0]), *found[1:])

    return split_first_line


#: fingerprints of WeasyPrint 70's ``strut`` and of the cache key it builds (``_font_style_cache_key``)
_STRUT_CODE = ("c1965b010d660333", "c873d537366719b9")
#: the values of that key (the fourteen font values, then the size and the line height), in its order
_STRUT_STYLE = (
    "font_family", "font_style", "font_stretch", "font_weight", "font_variant_ligatures", "font_variant_position",
    "font_variant_caps", "font_variant_numeric", "font_variant_alternates", "font_variant_east_asian",
    "font_feature_settings", "font_variation_settings", "font_language_override", "lang", "font_size",
    "line_height")


def _install_strut() -> None:
    import importlib

    try:
        from weasyprint.text import line_break

        original = line_break.strut
        if (code_fingerprint(original), code_fingerprint(line_break._font_style_cache_key)) != _STRUT_CODE:
            return
        modules = [importlib.import_module(f"weasyprint.{name}") for name in ("layout.inline", "css.units",
                                                                              "css.computed_values")]
    except (ImportError, AttributeError):
        return
    fast = _fast_strut(original)
    _replace_in((line_break, *modules), "strut", original, fast)


def _fast_strut(original: Callable[..., Any]) -> Callable[..., Any]:
    """WeasyPrint's ``strut`` with a tuple-keyed cache in front (see the module docstring)."""
    import operator

    style_values = operator.itemgetter(*_STRUT_STYLE)

    def strut(style: Any) -> Any:
        try:
            known = style.font_config._gnd_struts
        except AttributeError:
            try:
                known = style.font_config._gnd_struts = {}
            except AttributeError:
                return original(style)
        try:
            key = style_values(style)
            found = known.get(key)
        except (KeyError, TypeError):  # a value that cannot be hashed: WeasyPrint's own key copes
            return original(style)
        if found is None:
            found = known[key] = original(style)
        return found

    return strut


#: fingerprint of WeasyPrint 70's ``get_font_description``, and the style values it reads
_FONT_DESCRIPTION_CODE = "ecc587f0c56bcc23"
_FONT_DESCRIPTION_STYLE = ("font_family", "font_style", "font_stretch", "font_weight", "font_size",
                           "font_variant_caps", "font_variation_settings")


def _install_font_descriptions() -> None:
    try:
        from weasyprint.text import fonts, line_break
    except ImportError:
        return
    original: Any = getattr(fonts, "get_font_description", None)
    if not callable(original) or code_fingerprint(original) != _FONT_DESCRIPTION_CODE:
        return
    if getattr(line_break, "get_font_description", None) is not original:
        return
    shared = _shared_font_description(cast("Callable[..., Any]", original))
    shared.original = original  # type: ignore[attr-defined]
    line_break.get_font_description = shared  # only the line layouts: they hand it to Pango, which copies it


def _shared_font_description(original: Callable[..., Any]) -> Callable[..., Any]:
    """``get_font_description`` that builds one description per set of values (see the module docstring)."""
    import operator

    style_values = operator.itemgetter(*_FONT_DESCRIPTION_STYLE)
    built: dict[Any, Any] = {}

    def get_font_description(style: Any) -> Any:
        try:
            key = style_values(style)
            found = built.get(key)
        except (KeyError, TypeError):  # a list of families (SVG text), or another unhashable value
            return original(style)
        if found is None:
            found = built[key] = original(style)
        return found

    return get_font_description


def _memo_draw_text(module: Any, original: Callable[..., Any], recorder: _Recorder) -> Callable[..., Any]:
    """WeasyPrint's ``draw_text``, replaying the text operators of a line drawn before in the same document.

    A text box whose text, Pango-relevant style values (those of the line memo) and justification spacing
    equal those of one drawn earlier gets the operators recorded then: the same fonts, sizes and glyph
    strings, at its own position and colour, without setting up its Pango layout again. Text with a
    decoration, an ellipsis, no visible glyphs, or drawn by WeasyPrint's own ``draw_first_line`` (emoji,
    unknown glyphs) always goes through WeasyPrint.
    """
    import operator

    matrix_class = module.Matrix
    style_values = operator.itemgetter(*_LINE_STYLE)

    def draw_text(stream: Any, textbox: Any, offset_x: Any, text_overflow: Any, block_ellipsis: Any) -> Any:
        if text_overflow == "ellipsis" or block_ellipsis != "none" or recorder.ops is not None:
            return original(stream, textbox, offset_x, text_overflow, block_ellipsis)
        try:
            style = textbox.style
            font_size = style["font_size"]
            if (not font_size or font_size < 1e-6 or style["visibility"] != "visible"
                    or style["text_decoration_line"] != "none" or not textbox.text.strip()):
                return original(stream, textbox, offset_x, text_overflow, block_ellipsis)
            layout = textbox.pango_layout
            key = (layout.text, style_values(style), style.font_config, layout.justification_spacing)
            fonts = stream._fonts
            document = recorder.document
            if document is None or document[0] is not fonts:
                document = recorder.document = (fonts, {})
            operators = document[1].get(key)
        except (AttributeError, KeyError, TypeError):
            return original(stream, textbox, offset_x, text_overflow, block_ellipsis)
        if operators is None:
            recorder.ops = []
            try:
                result = original(stream, textbox, offset_x, text_overflow, block_ellipsis)
                if recorder.ops:
                    document[1][key] = recorder.ops
            finally:
                recorder.ops = None
            return result
        stream.set_color(style["color"])
        stream.begin_text()
        stream.set_text_matrix(*matrix_class(d=-1, e=textbox.position_x,
                                             f=textbox.position_y + textbox.baseline).values)
        for operator_ in operators:
            if type(operator_) is str:
                stream.show_text(operator_)
            else:
                stream.set_font_size(*operator_)
        stream.end_text()
        return None

    return draw_text


#: fingerprints of WeasyPrint 70's ``Layout.setup`` and of ``font_features``, which it calls
_SETUP_CODE = ("7acfee79355a5def", "45cef2f54826e83b")
#: the style values ``setup`` reads (the font description's among them)
_SETUP_STYLE = (
    "direction", "font_language_override", "lang", "text_decoration_line", "font_kerning", "font_variant_ligatures",
    "font_variant_position", "font_variant_caps", "font_variant_numeric", "font_variant_alternates",
    "font_variant_east_asian", "font_feature_settings", *_FONT_DESCRIPTION_STYLE)


def _install_shared_contexts() -> None:
    try:
        from weasyprint.text import fonts, line_break

        layout_class = line_break.Layout
        original = layout_class.setup
        if (code_fingerprint(original), code_fingerprint(fonts.font_features)) != _SETUP_CODE:
            return
        if not all(hasattr(line_break, name) for name in ("ffi", "gobject", "pango", "PANGO_DIRECTION", "LST_TO_ISO",
                                                          "unicode_to_char_p", "font_features",
                                                          "get_font_description")):
            return
    except (ImportError, AttributeError):
        return
    setup = _shared_context_setup(line_break, original)
    setup.original = original  # type: ignore[attr-defined]
    layout_class.setup = setup


def _shared_context_setup(module: Any, original: Callable[..., Any]) -> Callable[..., Any]:
    """``Layout.setup`` (``weasyprint/text/line_break.py``) with one Pango context per font configuration and
    style values (see the module docstring)."""
    import operator

    ffi, gobject, pango = module.ffi, module.gobject, module.pango
    style_values = operator.itemgetter(*_SETUP_STYLE)

    def context_for(style: Any) -> Any:
        features = module.font_features(
            style["font_kerning"], style["font_variant_ligatures"], style["font_variant_position"],
            style["font_variant_caps"], style["font_variant_numeric"], style["font_variant_alternates"],
            style["font_variant_east_asian"], style["font_feature_settings"])
        if features or style["text_decoration_line"] != "none":
            return False
        pango_context = ffi.gc(pango.pango_font_map_create_context(style.font_config.font_map),
                               gobject.g_object_unref)
        pango.pango_context_set_round_glyph_positions(pango_context, False)
        pango.pango_context_set_base_dir(pango_context, module.PANGO_DIRECTION[style["direction"]])
        if style["font_language_override"] != "normal":
            lang_p, lang = module.unicode_to_char_p(module.LST_TO_ISO.get(
                style["font_language_override"].lower(), style["font_language_override"]))
        elif style["lang"]:
            lang_p, lang = module.unicode_to_char_p(style["lang"])
        else:
            lang = None
            language = pango.pango_language_get_default()
        if lang:
            language = pango.pango_language_from_string(lang_p)
            pango.pango_context_set_language(pango_context, language)
        return pango_context, language

    def setup(self: Any, style: Any) -> None:
        shared: Any
        try:  # kept with the font configuration (whose font map they hold): style values -> (context, language),
            # or False: WeasyPrint's own setup
            contexts = style.font_config.__dict__.setdefault("_gnd_contexts", {})
            key = style_values(style)
            shared = contexts.get(key)
            if shared is None:
                shared = contexts[key] = context_for(style)
        except (AttributeError, KeyError, TypeError):
            shared = False
        if shared is False:
            original(self, style)
            return
        self.style = style
        self.first_line_direction = 0
        self.language = shared[1]
        self.layout = ffi.gc(pango.pango_layout_new(shared[0]), gobject.g_object_unref)
        pango.pango_layout_set_auto_dir(self.layout, False)
        pango.pango_layout_set_font_description(self.layout, module.get_font_description(style))
        self.ascent = self.underline_position = self.strikethrough_position = None

    return setup


#: fingerprints of WeasyPrint 70's ``set_page_type_computed_styles`` and ``_standardize_page_based_counters``
_PAGE_STYLES_CODE = ("49d9031517a8a64a", "f7e8031ec4175f21")
_MARGIN_BOXES = frozenset(f"@{name}" for name in (
    "top-left-corner", "top-left", "top-center", "top-right", "top-right-corner", "bottom-left-corner",
    "bottom-left", "bottom-center", "bottom-right", "bottom-right-corner", "left-top", "left-middle",
    "left-bottom", "right-top", "right-middle", "right-bottom"))


def _install_shared_margin_styles() -> None:
    try:
        from weasyprint.layout import page

        original = page.set_page_type_computed_styles
        if (code_fingerprint(original), code_fingerprint(page._standardize_page_based_counters)) != _PAGE_STYLES_CODE:
            return
    except (ImportError, AttributeError):
        return
    shared = _shared_margin_styles(original)
    shared.original = original  # type: ignore[attr-defined]
    page.set_page_type_computed_styles = shared


def _shared_margin_styles(original: Callable[..., Any]) -> Callable[..., Any]:
    """``set_page_type_computed_styles`` reusing an earlier page's margin box styles (see the module docstring)."""

    def set_page_type_computed_styles(page_type: Any, html: Any, style_for: Any) -> None:
        original(page_type, html, style_for)
        try:
            cascaded, computed = style_for._cascaded_styles, style_for._computed_styles
            earlier_pages = style_for.__dict__.setdefault("_gnd_margin_styles", [])
            page_declarations = cascaded.get((page_type, None))
            margins = {pseudo: cascaded[page_type, pseudo] for pseudo in _MARGIN_BOXES
                       if (page_type, pseudo) in cascaded and (page_type, pseudo) in computed}
        except (AttributeError, TypeError):
            return
        for earlier_declarations, earlier_margins in earlier_pages:
            if earlier_declarations == page_declarations and earlier_margins.keys() == margins.keys():
                for pseudo, declarations in margins.items():
                    earlier, style = earlier_margins[pseudo]
                    if earlier == declarations:
                        computed[page_type, pseudo] = style
                return
        earlier_pages.append((page_declarations, {pseudo: (declarations, computed[page_type, pseudo])
                                                  for pseudo, declarations in margins.items()}))

    return set_page_type_computed_styles


#: fingerprints of WeasyPrint 70's ``resolve_percentages``, ``resolve_one_percentage`` and ``percentage``
_PERCENT_CODE = ("c828feca26b259c8", "4b7c6ea84a3d7f41", "6f3409b3c0c59d49")
#: fingerprint of WeasyPrint 70's ``adjust_box_sizing`` (it reads the box's lengths and ``box_sizing`` only)
_BOX_SIZING_CODE = "75b809c1ac6e45ba"


def _install_percentages() -> None:
    import importlib

    try:
        from weasyprint.layout import percent

        original = percent.resolve_percentages
        fingerprints = tuple(code_fingerprint(f) for f in (original, percent.resolve_one_percentage,
                                                           percent.percentage, percent.adjust_box_sizing))
        if fingerprints[:3] != _PERCENT_CODE[:3] or not all(hasattr(percent, name) for name in (
                "boxes", "check_math", "adjust_box_sizing", "inf")):
            return
        modules = [importlib.import_module(f"weasyprint.layout.{name}")
                   for name in ("inline", "page", "float", "grid", "absolute", "block", "column", "table")]
    except (ImportError, AttributeError):
        return
    fast = _fast_resolve_percentages(percent, memo=fingerprints[3] == _BOX_SIZING_CODE)
    _replace_in((percent, *modules), "resolve_percentages", original, fast)


#: the box attributes ``resolve_percentages`` sets, and the style values they follow from (with ``box_sizing``)
_USED_LENGTHS = ("margin_left", "margin_right", "margin_top", "margin_bottom", "padding_left", "padding_right",
                 "padding_top", "padding_bottom", "width", "min_width", "max_width", "height", "min_height",
                 "max_height", "border_top_width", "border_right_width", "border_bottom_width", "border_left_width")


def _fast_resolve_percentages(module: Any, memo: bool = True) -> Callable[..., Any]:
    """WeasyPrint's ``resolve_percentages`` (``weasyprint/layout/percent.py``) in one loop, its results kept
    per style values and containing block size when ``memo`` (see the module docstring)."""
    import operator

    box_class, page_class = module.boxes.Box, module.boxes.PageBox
    percentage, check_math, adjust_box_sizing, inf = (module.percentage, module.check_math,
                                                      module.adjust_box_sizing, module.inf)
    sides = ("border_top_width", "border_right_width", "border_bottom_width", "border_left_width")
    style_values = operator.itemgetter(*_USED_LENGTHS, "box_sizing")
    used: dict[Any, dict[str, Any]] = {}  # (style values, containing block size, page box) -> the box's lengths

    def resolve_percentages(box: Any, containing_block: Any) -> None:
        if isinstance(containing_block, box_class):
            cb_width = containing_block.width
            cb_height = containing_block.height
        else:
            cb_width, cb_height = containing_block
        is_page = isinstance(box, page_class)
        maybe_height = cb_height if is_page else cb_width
        style = box.style
        key = None
        if memo and style["border_collapse"] != "collapse":
            try:
                key = (style_values(style), cb_width, cb_height, is_page)
                found = used.get(key)
            except (KeyError, TypeError):  # an unhashable value: computed below
                key = found = None
            if found is not None:
                box.__dict__.update(found)
                return
        if cb_height == "auto":
            height = style["height"]
            if height == "auto" or check_math(height) or height.unit == "%":
                box.height = "auto"
            else:
                assert height.unit.lower() == "px"
                box.height = height.value
            heights: tuple[tuple[str, Any], ...] = (("min_height", 0), ("max_height", inf))
        else:
            heights = (("height", cb_height), ("min_height", cb_height), ("max_height", cb_height))
        for name, refer_to in (("margin_left", cb_width), ("margin_right", cb_width), ("margin_top", maybe_height),
                               ("margin_bottom", maybe_height), ("padding_left", cb_width),
                               ("padding_right", cb_width), ("padding_top", maybe_height),
                               ("padding_bottom", maybe_height), ("width", cb_width), ("min_width", cb_width),
                               ("max_width", cb_width), *heights):
            value = style[name]
            unit = getattr(value, "unit", None)
            if unit == "%":
                value = refer_to * value.value / 100
            elif unit is not None:
                value = value.value
            elif value is not None and value != "auto":
                value = percentage(value, style, refer_to)
                key = None  # calc(): may read other values (font size)
            if value == "auto" and name in ("min_width", "min_height"):
                value = 0
            setattr(box, name, value)
        collapse = style["border_collapse"] == "collapse"
        for side in sides:
            if not (collapse and hasattr(box, side)):
                setattr(box, side, style[side])
        adjust_box_sizing(box, "width")
        adjust_box_sizing(box, "height")
        if key is not None:
            if len(used) > 50_000:  # distinct boxes: a few hundred in a report
                used.clear()
            attributes = box.__dict__
            used[key] = {name: attributes[name] for name in _USED_LENGTHS}

    return resolve_percentages


#: fingerprints of WeasyPrint 70's ``Layout.deactivate``, ``reactivate``, ``set_text`` and ``get_first_line``
_KEPT_CODE = ("345f147eb7961a74", "514aa78bbc9f28e8", "bbe930c627d7917a", "0a5c64847b0d379a")
#: what Pango takes for a paragraph separator (``pango_find_paragraph_boundary``), and other line separators
_PARAGRAPH_SEPARATORS = re.compile("[\n\r\u2029\u2028\x85\x0b\x0c]")


def _install_kept_layouts() -> None:
    try:
        from weasyprint.text import line_break

        layout_class = line_break.Layout
        functions = (layout_class.deactivate, layout_class.reactivate, layout_class.set_text,
                     layout_class.get_first_line)
        if tuple(code_fingerprint(f) for f in functions) != _KEPT_CODE:
            return
        if code_fingerprint(getattr(layout_class.setup, "original", layout_class.setup)) != _SETUP_CODE[0]:
            return
        pango = line_break.pango
        single_paragraph = pango.pango_layout_set_single_paragraph_mode
    except (ImportError, AttributeError):
        return
    for name, function in zip(("deactivate", "reactivate", "set_text"),
                              _keep_layouts(*functions[:3], single_paragraph), strict=True):
        function.original = getattr(layout_class, name)  # type: ignore[attr-defined]
        setattr(layout_class, name, function)


def _keep_layouts(deactivate: Callable[..., Any], reactivate: Callable[..., Any], set_text: Callable[..., Any],
                  single_paragraph: Callable[..., Any]) -> tuple[Callable[..., Any], ...]:
    """``Layout.deactivate``, ``reactivate`` and ``set_text`` that keep a laid-out Pango layout for drawing (see the
    module docstring)."""
    import operator

    style_values = operator.itemgetter(*_LINE_STYLE)
    separator = _PARAGRAPH_SEPARATORS.search

    def set_text_(self: Any, text: str, justify: bool = False) -> None:
        set_text(self, text, justify)
        if not separator(self.text):  # Pango shapes it alike in either mode: drawing's mode, set before shaping
            single_paragraph(self.layout, True)

    def deactivate_(self: Any) -> None:
        kept = None
        attributes = self.__dict__
        if "_gnd_kept" not in attributes:  # laid out, not drawn: drawing may change a layout (an ellipsis)
            try:
                style = self.style
                if style["text_decoration_line"] == "none" and not separator(self.text):
                    kept = [(self.layout, self.language, style_values(style), style.font_config, self.text)]
            except (AttributeError, KeyError, TypeError):
                kept = None
        deactivate(self)
        attributes["_gnd_kept"] = kept

    def reactivate_(self: Any, style: Any) -> None:
        kept = self.__dict__.get("_gnd_kept")
        self._gnd_kept = None  # drawn: not kept again
        if kept and not self.justification_spacing:
            layout, language, values, font_config, text = kept.pop()  # a copy of the line (the memo's) draws anew
            try:
                same = text == self.text and style.font_config is font_config and style_values(style) == values
            except (AttributeError, KeyError, TypeError):
                same = False
            if same:
                self.style = style
                self.first_line_direction = 0
                self.language = language
                self.layout = layout
                self.ascent = self.underline_position = self.strikethrough_position = None
                return
        reactivate(self, style)

    return deactivate_, reactivate_, set_text_


def constants_fingerprint(function: Any) -> str:
    """A short hash of the names and all the constants (tuples of strings too) of ``function``'s code."""
    code = function.__code__
    return hashlib.sha256(repr((code.co_names, code.co_consts)).encode()).hexdigest()[:16]


#: fingerprints (:func:`constants_fingerprint`) of WeasyPrint 70's ``Box.is_in_normal_flow`` and the five tests it asks
_FLOW_CODE = ("e2fc48b19c36b793",)
_FLOW_TESTS = ("is_in_normal_flow", "is_floated", "is_absolutely_positioned", "is_running", "is_footnote", "is_note")


def _install_normal_flow() -> None:
    try:
        from weasyprint.formatting_structure import boxes

        box_class = boxes.Box
        methods = [box_class.__dict__[name] for name in _FLOW_TESTS]
    except (ImportError, AttributeError, KeyError):
        return
    if hashlib.sha256(repr([constants_fingerprint(m) for m in methods]).encode()).hexdigest()[:16] != _FLOW_CODE[0]:
        return
    for value in vars(boxes).values():  # a subclass with its own test would not be asked
        if isinstance(value, type) and issubclass(value, box_class) and value is not box_class:
            if any(name in value.__dict__ for name in _FLOW_TESTS):
                return
    fast = _fast_in_normal_flow()
    fast.original = methods[0]  # type: ignore[attr-defined]
    box_class.is_in_normal_flow = fast


def _fast_in_normal_flow() -> Callable[[Any], bool]:
    """``Box.is_in_normal_flow`` (``weasyprint/formatting_structure/boxes.py``) reading each style value once."""
    out_of_flow = frozenset({"left", "right", "inline-start", "inline-end", "footnote"})

    def is_in_normal_flow(self: Any) -> bool:
        style = self.style
        if style["float"] in out_of_flow:
            return False
        position = style["position"]
        if position in ("absolute", "fixed"):
            return False
        head = position[0]
        return head != "running()" and head != "note()"

    return is_in_normal_flow


#: fingerprint (:func:`constants_fingerprint`) of pydyf 0.13's ``_to_bytes``
_TO_BYTES_CODE = "9035054386f86fd9"


def _install_to_bytes() -> None:
    try:
        import pydyf
    except ImportError:
        return
    original = getattr(pydyf, "_to_bytes", None)
    if not callable(original) or constants_fingerprint(original) != _TO_BYTES_CODE:
        return
    fast = _fast_to_bytes(cast("Callable[[Any], bytes]", original))
    fast.original = original  # type: ignore[attr-defined]
    pydyf._to_bytes = fast


def _fast_to_bytes(original: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """pydyf's ``_to_bytes`` with a float's bytes kept once made (see the module docstring)."""
    floats: dict[float, bytes] = {}

    def to_bytes(item: Any) -> bytes:
        kind = type(item)
        if kind is bytes:
            return cast(bytes, item)
        if kind is float:
            found = floats.get(item)
            if found is None:
                if len(floats) > 100_000:
                    floats.clear()
                found = floats[item] = original(item)
            return found
        if kind is int:
            return str(item).encode("ascii")
        return original(item)

    return to_bytes


#: cffi's parser state after WeasyPrint's ``cdef``, stored (see the module docstring)
DECLARATIONS = Path(__file__).resolve().parent / "templates" / "weasyprint-cdef.pickle"
#: the parser attributes a ``cdef`` sets (``_structnode2type`` holds weak references to syntax trees: left empty)
_PARSER_STATE = ("_declarations", "_included_declarations", "_anonymous_counter", "_int_constants", "_recomplete",
                 "_uses_new_feature", "_inside_extern_python", "_partial_length")
#: fingerprints of cffi 2's ``FFI.cdef`` and ``FFI._cdef`` (what a restored ``cdef`` does in their place)
_CDEF_CODE = ("7beb3558510ce313", "f0ebabf57785f773")
#: set once WeasyPrint's declarations came from the stored state (the tests read it)
restored_declarations: list[bool] = []


def _declarations_key(csource: str) -> bytes:
    import sys

    import cffi

    digest = hashlib.sha256(repr((csource, cffi.__version__, sys.version_info[:2])).encode()).hexdigest()
    return f"# gnd cffi declarations: cffi {cffi.__version__} {digest}\n".encode()


def declarations_bytes(csource: str) -> bytes:
    """What :data:`DECLARATIONS` holds for ``csource``: its key line, then cffi's parser state after a fresh
    ``cdef`` of it, pickled."""
    import pickle

    import cffi

    ffi = cffi.FFI()
    ffi.cdef(csource)
    parser = ffi._parser
    if parser._recomplete:  # would need finishing against this FFI: not stored
        raise ValueError("the declarations leave types to complete")
    state = {name: getattr(parser, name) for name in _PARSER_STATE}
    return _declarations_key(csource) + pickle.dumps(state, protocol=4)


def weasyprint_csource() -> str:
    """The C declarations WeasyPrint gives cffi (imports WeasyPrint)."""
    from weasyprint.text.ffi import ffi

    return str(ffi._cdefsources[0])


@contextlib.contextmanager
def stored_declarations() -> Iterator[None]:
    """While WeasyPrint is imported: a first ``cdef`` of a fresh FFI whose text has the stored key takes the stored
    parser state instead of parsing; pycparser is imported when first needed (see the module docstring)."""
    import sys

    try:
        from cffi import api
        data = DECLARATIONS.read_bytes()
    except (ImportError, OSError):
        yield
        return
    ffi_class = api.FFI
    original = ffi_class.cdef
    if (code_fingerprint(original), code_fingerprint(ffi_class._cdef)) != _CDEF_CODE:
        yield
        return
    if "pycparser" not in sys.modules and "cffi.cparser" not in sys.modules and data.startswith(b"# gnd cffi "):
        _defer_module("pycparser")

    def cdef(self: Any, csource: str, override: bool = False, packed: bool = False, pack: Any = None) -> None:
        parser = self._parser
        if (isinstance(csource, str) and not (override or packed or pack) and not self._cdefsources
                and not getattr(parser, "_declarations", True) and not getattr(parser, "_int_constants", True)):
            key = _declarations_key(csource)
            state = _stored_state(data[len(key):]) if data.startswith(key) else None
            if state is not None:
                with self._lock:
                    self._cdef_version = object()
                    parser.__dict__.update(state)
                    self._cdefsources.append(csource)
                restored_declarations.append(True)
                return
        original(self, csource, override=override, packed=packed, pack=pack)

    ffi_class.cdef = cdef
    try:
        yield
    finally:
        ffi_class.cdef = original


def _stored_state(data: bytes) -> dict[str, Any] | None:
    import pickle

    try:
        state = pickle.loads(data)  # our own file, shipped beside this module
    except Exception:  # noqa: BLE001 - damaged: cffi parses instead
        return None
    if not isinstance(state, dict) or tuple(state) != _PARSER_STATE or state["_recomplete"]:
        return None
    return state


def _defer_module(name: str) -> None:
    import sys

    module = _Deferred(name)
    module.__dict__["_package"] = True  # cffi reads attributes only: ``import pycparser.c_parser`` elsewhere works
    sys.modules[name] = module


if __name__ == "__main__":  # python -m reports.weasyprint_speed: store WeasyPrint's cffi declarations
    import sys

    if sys.argv[1:]:
        sys.exit("usage: python -m reports.weasyprint_speed  (rewrites templates/weasyprint-cdef.pickle)")
    DECLARATIONS.write_bytes(declarations_bytes(weasyprint_csource()))
    print(f"wrote {DECLARATIONS}")
