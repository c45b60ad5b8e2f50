"""``@record`` behaves as ``@dataclass(frozen=True)`` wherever the code relies on it.

Every class here is defined twice from one body, once with each decorator, and the two are
compared; each test runs with the loop-bound ``__init__`` of a class's first instantiations and
with the compiled one.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError, dataclass, field
from pathlib import Path
from typing import Any

import pytest

import doctor.record as record_module
from doctor import PLAIN
from doctor.findings import Evidence, Finding, Fix, Impact
from doctor.record import record

STDLIB = dataclass(frozen=True)


def make(decorate: Any) -> dict[str, Any]:
    """The same classes, decorated by ``decorate``."""

    @decorate
    class Plain:
        address: str
        vendor: int | None
        name: str | None = None
        path: tuple[str, ...] = ()
        aer: dict[str, int] = field(default_factory=dict)
        score: float = field(default=0.0, compare=False)
        secret: str = field(default="", repr=False)
        label: str = field(default="x", hash=False)

    @decorate
    class Post:
        severity: str
        subject_id: str = ""

        def __post_init__(self) -> None:
            object.__setattr__(self, "severity", self.severity.upper())
            if not self.subject_id:
                object.__setattr__(self, "subject_id", f"id:{self.severity}")

    @decorate
    class Special:
        first: int
        derived: list[int] = field(default_factory=list, init=False)
        fixed: str = field(default="f", init=False)
        late: int = field(default=5, kw_only=True)
        must: str = field(kw_only=True)

    @decorate
    class Empty:
        pass

    @decorate
    class One:
        value: float

    return {"Plain": Plain, "Post": Post, "Special": Special, "Empty": Empty, "One": One}


@pytest.fixture(params=["warm", "compiled"])
def pair(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    """(stdlib classes, record classes); the record ones compile ``__init__`` at once or never."""
    monkeypatch.setattr(record_module, "WARM_CALLS", 10**9 if request.param == "warm" else 0)
    return make(STDLIB), make(record)


def test_a_record_is_a_dataclass_with_the_same_fields(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    std, rec = pair
    for name in std:
        assert dataclasses.is_dataclass(rec[name])
        assert [(f.name, f.default, f.default_factory, f.init, f.repr, f.hash, f.compare, f.kw_only)
                for f in dataclasses.fields(rec[name])] == \
               [(f.name, f.default, f.default_factory, f.init, f.repr, f.hash, f.compare, f.kw_only)
                for f in dataclasses.fields(std[name])]
        assert rec[name].__match_args__ == std[name].__match_args__
        params = rec[name].__dataclass_params__
        assert (params.init, params.repr, params.eq, params.frozen) == (True, True, True, True)


def test_values_repr_equality_and_hash_match_the_stdlib(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    std, rec = pair
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("Plain", ("0000:01:00.0", 0x10DE), {}),
        ("Plain", ("0000:01:00.0", None, "gpu"), {"path": ("a", "b"), "score": 3.5, "secret": "s", "label": "y"}),
        ("Plain", (), {"vendor": 1, "address": "a", "aer": {"x": 1}}),
        ("Post", ("high",), {}),
        ("Post", (), {"severity": "low", "subject_id": "eth0"}),
        ("Special", (1,), {"must": "m"}),
        ("Special", (), {"first": 2, "late": 7, "must": "n"}),
        ("Empty", (), {}),
        ("One", (float("nan"),), {}),
    ]
    for name, args, kwargs in calls:
        s, r = std[name](*args, **kwargs), rec[name](*args, **kwargs)
        assert repr(r) == repr(s)
        assert vars(r) == vars(s) or name == "One"  # nan != nan
        assert dataclasses.asdict(r) == dataclasses.asdict(s) or name == "One"
        assert (r == rec[name](*args, **kwargs)) == (s == std[name](*args, **kwargs))
        assert r != s  # another class, as between two stdlib dataclasses
        if name not in ("Plain", "Special"):  # those hold a dict or list: unhashable in both
            assert hash(r) == hash(s)
    nan = float("nan")
    assert rec["One"](nan) == rec["One"](nan)  # the same object compares equal inside a tuple, as in the stdlib
    assert std["One"](nan) == std["One"](nan)


def test_compare_and_hash_flags_are_honoured(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    _, rec = pair
    plain = rec["Plain"]
    assert plain("a", 1, score=1.0) == plain("a", 1, score=2.0)  # compare=False
    assert plain("a", 1, label="x") != plain("a", 1, label="y")  # hash=False still compares
    with pytest.raises(TypeError, match="unhashable"):
        hash(plain("a", 1))
    assert rec["Post"]("a") != rec["Post"]("b")
    assert len({rec["Post"]("a"), rec["Post"]("a"), rec["Post"]("b")}) == 2
    assert rec["Post"]("a").__eq__(object()) is NotImplemented


def test_fields_cannot_be_assigned_or_deleted(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    std, rec = pair
    for classes in (std, rec):
        obj = classes["Plain"]("a", 1)
        with pytest.raises(FrozenInstanceError, match="cannot assign to field 'address'"):
            obj.address = "b"
        with pytest.raises(FrozenInstanceError, match="cannot assign to field 'other'"):
            obj.other = 1  # not a field either: the stdlib forbids it on the class itself
        with pytest.raises(FrozenInstanceError, match="cannot delete field 'name'"):
            del obj.name
        assert obj.address == "a"


def test_a_plain_subclass_may_set_its_own_attributes_but_not_fields() -> None:
    base = make(record)["Post"]

    class Sub(base):  # type: ignore[misc, valid-type]
        pass

    obj = Sub("x")
    obj.extra = 1
    assert obj.extra == 1 and obj.severity == "X"
    with pytest.raises(FrozenInstanceError):
        obj.severity = "y"


def test_defaults_factories_init_false_and_kw_only(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    _, rec = pair
    a, b = rec["Plain"]("a", 1), rec["Plain"]("b", 2)
    assert a.aer == {} and a.aer is not b.aer  # a new dict each time
    special = rec["Special"](1, must="m")
    assert (special.derived, special.fixed, special.late) == ([], "f", 5)
    with pytest.raises(TypeError):
        rec["Special"](1, "m")  # keyword-only
    with pytest.raises(TypeError):
        rec["Special"](1, must="m", derived=[1])  # init=False is no parameter


@pytest.mark.parametrize(("args", "kwargs"), [
    ((), {}), (("a",), {}), (("a", 1, None, (), {}, 0.0, "", "x", "extra"), {}), (("a", 1), {"bogus": 1}),
    (("a", 1), {"address": "b"}), ((), {"vendor": 1}),
])
def test_wrong_arguments_raise_the_stdlib_error(pair: tuple[dict[str, Any], dict[str, Any]], args: tuple[Any, ...],
                                                kwargs: dict[str, Any]) -> None:
    std, rec = pair
    with pytest.raises(TypeError) as expected:
        std["Plain"](*args, **kwargs)
    with pytest.raises(TypeError) as got:
        rec["Plain"](*args, **kwargs)
    assert str(got.value).split("()", 1)[-1] == str(expected.value).split("()", 1)[-1]


def test_a_field_without_default_after_one_with_is_refused_at_definition() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @record
        class Bad:
            a: int = 0
            b: int  # type: ignore[misc]


def test_post_init_runs_on_every_path(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    _, rec = pair
    post = rec["Post"]("medium")
    assert (post.severity, post.subject_id) == ("MEDIUM", "id:MEDIUM")
    assert dataclasses.replace(post, subject_id="").subject_id == "id:MEDIUM"


@pytest.mark.skipif(PLAIN, reason="tests a start-up shortcut that GND_PLAIN=1 turns off")
def test_init_is_compiled_only_once_a_class_is_used_often(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[type] = []
    real = record_module._compile_init

    def counting(cls: type, fields: Any) -> Any:
        compiled.append(cls)
        return real(cls, fields)

    monkeypatch.setattr(record_module, "_compile_init", counting)
    monkeypatch.setattr(record_module, "WARM_CALLS", 3)
    classes = make(record)
    assert compiled == []  # defining compiles nothing
    post = classes["Post"]
    warm_init = post.__init__
    for i in range(3):
        assert post(str(i)).severity == str(i)
    assert compiled == [] and post.__init__ is warm_init
    assert post("z").subject_id == "id:Z"
    assert compiled == [post] and post.__init__ is not warm_init
    post("y")
    assert compiled == [post]
    assert post.__init__.__qualname__.endswith("Post.__init__")


def test_replace_asdict_astuple_copy_and_pickle() -> None:
    finding = Finding("high", "GPU 0 (0000:1b:00.0)", "x8 link", evidence=(Evidence("lspci", "LnkSta x8"),),
                      impact=Impact(40.0, "half the bandwidth"))
    assert finding.subject_id == "0000:1b:00.0"  # __post_init__
    assert str(finding.severity) == "high"
    ranked = dataclasses.replace(finding, rank=3)
    assert ranked.rank == 3 and ranked.subject_id == finding.subject_id and ranked != finding
    assert dataclasses.replace(ranked, rank=0) == finding
    assert dataclasses.asdict(finding)["evidence"] == ({"source": "lspci", "value": "LnkSta x8"},)
    assert dataclasses.astuple(Evidence("a", "b")) == ("a", "b")
    assert copy.copy(finding) == finding and copy.deepcopy(finding) == finding
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(finding, protocol))
        assert again == finding and hash(again.evidence) == hash(finding.evidence)
    assert Fix() == Fix() and Fix().steps == ()
    match finding:
        case Finding("high", subject):
            assert subject.startswith("GPU 0")
        case _:
            pytest.fail("match_args")


def test_classes_the_stdlib_must_build_still_work() -> None:
    @record
    class Base:
        a: int

    @record
    class Child(Base):
        b: int = 2

    @dataclass(frozen=True)
    class StdChild(Base):
        c: int = 3

    @record
    class OwnRepr:
        a: int

        def __repr__(self) -> str:
            return "mine"

    assert Child(1) == Child(1, 2) and repr(Child(1)) == "test_classes_the_stdlib_must_build_still_work.<locals>.Child(a=1, b=2)"
    assert StdChild(1).c == 3
    with pytest.raises(FrozenInstanceError):
        Child(1).b = 3  # type: ignore[misc]
    assert repr(OwnRepr(1)) == "mine" and OwnRepr(1) == OwnRepr(1)
    with pytest.raises(TypeError, match="non-frozen"):
        @dataclass
        class Mutable(Base):  # the stdlib's own check sees a frozen base
            pass


def test_a_field_without_default_and_init_false_stays_unset() -> None:
    for decorate in (STDLIB, record):
        @decorate
        class Later:
            a: int
            b: int = field(init=False, repr=False, compare=False)

        obj = Later(1)
        assert not hasattr(obj, "b") and repr(obj).endswith("Later(a=1)") and obj == Later(1)


@pytest.mark.skipif(PLAIN, reason="tests a start-up shortcut that GND_PLAIN=1 turns off")
def test_a_class_without_docstring_gets_one_naming_its_parameters() -> None:
    @record
    class Bare:
        a: int
        b: str = ""

    assert Bare.__doc__ == "Bare(a, b)"


def test_the_type_checker_sees_a_frozen_dataclass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mypy rejects assigning a field and checks the constructor, as for @dataclass(frozen=True)."""
    mypy_api = pytest.importorskip("mypy.api")
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)  # where mypy finds the doctor package
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from dataclasses import field\n"
        "from doctor.record import record\n\n"
        "@record\n"
        "class A:\n"
        "    x: int\n"
        "    y: str = 'a'\n"
        "    z: list[int] = field(default_factory=list)\n\n"
        "a = A(1, 'b', [2])\n"
        "a.x = 2\n"
        "A('no')\n"
        "A(1, w=3)\n")
    out, _, status = mypy_api.run([str(sample), "--python-version", "3.10", "--no-error-summary",
                                   "--cache-dir", str(tmp_path / "cache"), "--follow-imports", "silent"])
    lines = [line.split(": error: ", 1)[-1] for line in out.splitlines() if ": error: " in line]
    assert status == 1
    assert any("read-only" in line for line in lines), out  # a.x = 2
    assert any('incompatible type "str"; expected "int"' in line for line in lines), out  # A('no')
    assert any('Unexpected keyword argument "w"' in line for line in lines), out
    assert len(lines) == 3, out  # the valid call passes
