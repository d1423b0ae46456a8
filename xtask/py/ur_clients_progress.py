"""pytest plugin loaded by `cargo xtask clients` (`-p ur_clients_progress`).

Appends one line per test event to the file named by UR_CLIENTS_PROGRESS,
written through line by line, so that when the SYCL runtime aborts the
process the runner still knows how many tests finished, with which outcome,
and which test was running:

    start <nodeid>
    <outcome> <nodeid>     (passed / failed / skipped / error)
    lacks {"id": <nodeid>, "why": <reason>}   (a failure the device lacks a feature for)
    done <nodeid>

With UR_CLIENTS_ONLY set to a JSON list of node ids, only those tests run,
in the suite's order (the runner asks why a test that aborted the process
fails when it runs alone, or after an earlier test).
"""

import os

_PATH = os.environ.get("UR_CLIENTS_PROGRESS")
_OUT = open(_PATH, "a", buffering=1, encoding="utf-8") if _PATH else None


def _write(kind, nodeid):
    if _OUT is not None:
        _OUT.write(f"{kind} {nodeid}\n")


def pytest_runtest_logstart(nodeid, location):
    _write("start", nodeid)


def pytest_runtest_logreport(report):
    if report.when == "call":
        _write(report.outcome, report.nodeid)
    elif report.outcome == "failed":
        # A failing setup or teardown is what pytest (and junit) call an error.
        _write("error", report.nodeid)
    elif report.when == "setup" and report.outcome == "skipped":
        _write("skipped", report.nodeid)


def pytest_runtest_logfinish(nodeid, location):
    _write("done", nodeid)


# What the device lacks, from `cargo xtask clients` (clients::known), as
# JSON in UR_CLIENTS_SKIP:
#   {"skip": [[module, test, why], ...], "skip_ids": [[nodeid, why], ...],
#    "fail_ids": [[nodeid, why], ...], "lacks": [[regex, why], ...]}
# "skip": tests that abort the process on this device (a client bug on a
# device without a feature), or that need a feature the device lacks, get a
# skip mark with the reason, so the rest of the suite runs. "skip_ids": the
# tests (node ids) that aborted an earlier attempt of this run for a device
# lack, skipped the same way. "fail_ids": the tests that aborted an
# earlier attempt and do not fail for a device lack alone (a crash): they
# error in setup with the reason, so the crash counts. "lacks": a failing test whose exception (or one it
# was raised from or while handling) matches the regex (the device lacks
# what the test needs, e.g. a builtin its kernel calls) is reported as
# skipped, with the reason and the matching text.
import json
import re

import pytest

_SKIP = json.loads(os.environ.get("UR_CLIENTS_SKIP") or "{}")
_ABORTING = [(m, t, why) for m, t, why in _SKIP.get("skip", [])]
_ABORTED = {nodeid: why for nodeid, why in _SKIP.get("skip_ids", [])}
_CRASHED = {nodeid: why for nodeid, why in _SKIP.get("fail_ids", [])}
_ONLY = set(json.loads(os.environ.get("UR_CLIENTS_ONLY") or "null") or [])
_LACKS = [(re.compile(rx), why) for rx, why in _SKIP.get("lacks", [])]


def _matches(item, module, test):
    """Is `item` the function `test` of `module` (a module's last name, or
    a test class's name), whatever its parameters?"""
    function = getattr(item, "originalname", None) or item.name.split("[")[0]
    mod = getattr(item, "module", None)
    names = (getattr(mod, "__name__", "") or "").split(".")
    cls = getattr(item, "cls", None)
    if cls is not None:
        names.append(cls.__name__)
    return function == test and module in names


def pytest_collection_modifyitems(config, items):
    if _ONLY:
        others = [item for item in items if item.nodeid not in _ONLY]
        items[:] = [item for item in items if item.nodeid in _ONLY]
        config.hook.pytest_deselected(items=others)
    for item in items:
        if item.nodeid in _ABORTED:
            item.add_marker(pytest.mark.skip(reason=_ABORTED[item.nodeid]))
            continue
        for module, test, why in _ABORTING:
            if _matches(item, module, test):
                item.add_marker(pytest.mark.skip(reason=f"device lacks a feature: {why}"))


def pytest_runtest_setup(item):
    why = _CRASHED.get(item.nodeid)
    if why is not None:
        pytest.fail(why, pytrace=False)


def _messages(exc):
    """The messages of an exception and of those it was raised from or
    while handling (what a failure's report shows)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield f"{type(exc).__name__}: {exc}"
        exc = exc.__cause__ or exc.__context__


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    """A failure whose exception says the device lacks a feature becomes a
    skip with the reason, decided before pytest renders the failure's
    traceback: rendering it costs ~0.1 s a test, and on PoCL most of dpnp's
    tests fail that way (sum and arraycreation then run past their time
    limit). The default hook then makes the (skipped) report."""
    excinfo = call.excinfo
    if not _LACKS or excinfo is None or isinstance(excinfo.value, pytest.skip.Exception):
        return None
    text = "\n".join(_messages(excinfo.value))
    for rx, why in _LACKS:
        found = rx.search(text)
        if found:
            reason = f"device lacks a feature: {why} ({found.group(0)})"
            _write("lacks", json.dumps({"id": item.nodeid, "why": reason}))
            try:
                # At the test's location, as a skip mark's skip is.
                raise pytest.skip.Exception(reason, _use_item_location=True)
            except pytest.skip.Exception:
                call.excinfo = pytest.ExceptionInfo.from_current()
            return None
    return None
