"""What keeps ``gnd check`` quick to start: the modules it loads define nothing costly at import.

A ``@dataclass(frozen=True)`` compiles six methods when the module is imported (about 1 ms each
class); ``@record`` compiles nothing until the class is used. A module-level ``re.compile`` runs on
every start; ``lazy()`` compiles on first use. Both rules apply to the modules a ``gnd check``
actually loads. And the run itself pauses the cyclic garbage collector, then restores it.
"""

from __future__ import annotations

import ast
import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from doctor import PLAIN

ROOT = Path(__file__).resolve().parent.parent


def _check_path_modules() -> list[Path]:
    code = ("import json, os, sys, tempfile; from doctor.cli import main; "
            "main(['check', 'fixtures/hgx-h100-sick', '-o', os.path.join(tempfile.mkdtemp(), 'out.txt')]); "
            "print(json.dumps(sorted({getattr(m, '__file__', None) or '' for m in list(sys.modules.values())})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    files = [Path(f) for f in json.loads(out.strip().splitlines()[-1]) if f]
    return sorted(f for f in files if f.is_relative_to(ROOT) and f.suffix == ".py")


def _module_level_calls(tree: ast.Module) -> list[ast.Call]:
    """Calls made while the module is imported (not inside a function or lambda)."""
    calls: list[ast.Call] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Call):
                calls.append(child)
            visit(child)

    visit(tree)
    return calls


def test_check_path_defines_no_compiled_dataclass_or_regex_at_import() -> None:
    modules = _check_path_modules()
    assert len(modules) > 100  # the doctor, its facts and all checks
    bad = []
    for path in modules:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for deco in node.decorator_list:
                    if (isinstance(deco, ast.Call) and getattr(deco.func, "id", getattr(deco.func, "attr", "")) ==
                            "dataclass" and any(k.arg == "frozen" for k in deco.keywords)):
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: use @record")
        for call in _module_level_calls(tree):
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "compile" and getattr(func.value, "id", "") == "re":
                bad.append(f"{path.relative_to(ROOT)}:{call.lineno} re.compile at import: use lazy()")
    assert bad == []


@pytest.mark.skipif(PLAIN, reason="tests a start-up shortcut that GND_PLAIN=1 turns off")
def test_check_runs_with_the_collector_paused_and_restores_it(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    from doctor.cli import main
    from doctor.commands import check

    seen: list[bool] = []
    real_run = check.run

    def spy(args: object) -> int:
        seen.append(gc.isenabled())
        return real_run(args)

    monkeypatch.setattr(check, "run", spy)
    assert gc.isenabled()
    assert main(["check", str(ROOT / "fixtures/hgx-h100-healthy"), "-o", str(tmp_path / "out.txt")]) in (0, 1)
    assert seen == [False] and gc.isenabled()
    monkeypatch.setattr(check, "run", lambda args: 1 // 0)
    with pytest.raises(ZeroDivisionError):
        main(["check", str(ROOT / "fixtures/hgx-h100-healthy")])
    assert gc.isenabled()  # restored on an error too


@pytest.mark.skipif(PLAIN, reason="tests a start-up shortcut that GND_PLAIN=1 turns off")
def test_the_executable_pauses_the_collector_before_the_check_path_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import doctor.cli`` loads neither argparse nor the findings (dataclasses, inspect): those load in
    main(), which ``gnd check`` enters with the collector already off."""
    code = "import sys, doctor.cli; print(sorted({'argparse', 'doctor.findings', 'dataclasses'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    import doctor.cli as cli

    seen: list[bool] = []
    monkeypatch.setattr(cli, "main", lambda argv: seen.append(gc.isenabled()) or 0)
    monkeypatch.setattr(cli.os, "_exit", lambda code: (_ for _ in ()).throw(SystemExit(code)))
    monkeypatch.setattr(sys, "argv", ["gnd", "check", "-o", "/dev/null"])
    try:
        with pytest.raises(SystemExit):
            cli.console_main()
    finally:
        gc.enable()
    assert seen == [False]
    monkeypatch.setattr(sys, "argv", ["gnd", "checks"])
    with pytest.raises(SystemExit):
        cli.console_main()
    assert seen == [False, True]  # other commands keep the collector
