"""Under CI (CI=true) a skip fails unless tests/skip_allowlist.toml lists the test with a reason; outside CI
skips stay skips. The hooks of tests/conftest.py run in a pytest of their own (pytester)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SKIP_ALLOWLIST, load_skip_allowlist

HOOKS = "from tests.conftest import pytest_configure\n"

TESTS = """
import pytest

def test_runs():
    pass

@pytest.mark.skipif(True, reason="needs the moon")
def test_marked():
    pass

def test_listed():
    pytest.skip("no GPU on the CI machine")

@pytest.fixture
def tool():
    pytest.skip("tool missing")

def test_fixture_skips(tool):
    pass

@pytest.mark.parametrize("op", ["ring", "tree"])
def test_param(op):
    if op == "tree":
        pytest.skip("tree is not modelled")

@pytest.mark.xfail(reason="a known bug")
def test_xfails():
    assert False
"""

ALLOWLIST = """
[[skip]]
test = "test_mod.py::test_listed"
reason = "the CI machine has no GPU"

[[skip]]
test = "test_mod.py::test_param[tree*]"
reason = "brackets are literal, * is the only wildcard"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")   # the rootdir is this directory, not the repository
    pytester.makeconftest(HOOKS)
    pytester.makepyfile(test_mod=TESTS)
    (pytester.path / SKIP_ALLOWLIST).parent.mkdir()
    (pytester.path / SKIP_ALLOWLIST).write_text(ALLOWLIST)
    return pytester


def test_unlisted_skips_fail_under_ci(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    result = project.runpytest("-rfEs")
    result.assert_outcomes(passed=2, errors=2, skipped=2, xfailed=1)   # setup failed: pytest says ERROR
    result.stdout.fnmatch_lines([
        "*skipped under CI (CI=true): Skipped: needs the moon",
        f"*A skip fails CI unless {SKIP_ALLOWLIST} lists the test*",
        "*skipped under CI (CI=true): Skipped: tool missing",
        "SKIPPED * no GPU on the CI machine",
        "SKIPPED * tree is not modelled",
    ])
    failed = {r.nodeid for r in result.reprec.getreports("pytest_runtest_logreport") if r.failed}
    assert failed == {"test_mod.py::test_marked", "test_mod.py::test_fixture_skips"}


def test_outside_ci_skips_stay_skips(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    project.runpytest().assert_outcomes(passed=2, skipped=4, xfailed=1)
    monkeypatch.setenv("CI", "false")
    project.runpytest().assert_outcomes(passed=2, skipped=4, xfailed=1)


def test_module_level_skips_fail_under_ci_unless_listed(pytester: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(HOOKS)
    pytester.makepyfile(test_optional='import pytest\npytest.importorskip("no_such_module_ct13")\n\n'
                                      'def test_x():\n    pass\n')
    pytester.mkpydir("sub").joinpath("conftest.py").write_text(
        'import pytest\npytest.skip("no docker here", allow_module_level=True)\n')
    pytester.path.joinpath("sub", "test_in_sub.py").write_text("def test_y():\n    pass\n")
    monkeypatch.delenv("CI", raising=False)
    pytester.runpytest().assert_outcomes(skipped=2)

    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest("--continue-on-collection-errors")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*skipped under CI (CI=true): *no_such_module_ct13*",
                                 "*skipped under CI (CI=true): *no docker here*"])

    pytester.mkdir("tests")
    pytester.path.joinpath(SKIP_ALLOWLIST).write_text(
        '[[skip]]\ntest = "test_optional.py"\nreason = "optional extra"\n\n'
        '[[skip]]\ntest = "sub/*"\nreason = "the CI machine has no Docker"\n')
    pytester.runpytest().assert_outcomes(skipped=2)


def test_an_entry_without_a_reason_is_refused(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(HOOKS)
    pytester.makepyfile(test_mod="def test_x():\n    pass\n")
    pytester.mkdir("tests")
    pytester.path.joinpath(SKIP_ALLOWLIST).write_text('[[skip]]\ntest = "test_mod.py::test_x"\n')
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{SKIP_ALLOWLIST}: [[][[]skip]] entry 1 needs both `test` and `reason`*"])


def test_the_repository_allowlist_gives_a_reason_for_every_entry() -> None:
    path = Path(__file__).resolve().parents[2] / SKIP_ALLOWLIST
    entries = load_skip_allowlist(path)
    assert path.exists() and all(len(reason) > 10 for _, reason in entries)
