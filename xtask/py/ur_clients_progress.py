"""pytest plugin loaded by `cargo xtask clients` (`-p ur_clients_progress`).

Appends one line per test event to the file named by UR_CLIENTS_PROGRESS,
written through line by line, so that when the SYCL runtime aborts the
process the runner still knows how many tests finished, with which outcome,
and which test was running:

    start <nodeid>
    <outcome> <nodeid>     (passed / failed / skipped / error)
    done <nodeid>
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
