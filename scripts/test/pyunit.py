"""Runs test modules of test/python for scripts/test.mjs and says what it counted.

usage: python scripts/test/pyunit.py SUMMARY_JSON NAME [NAME...]
NAME is a dotted unittest name (test.python.test_probe, or a class or method in it). The
unittest output goes to stderr as usual; SUMMARY_JSON gets {"passed", "failed", "skipped"};
every skip is appended to $NPU_BLOCK_GATE_TEST_SKIPS as one JSON line (the file, the test,
what it needs and why) for the runner to count and print. A skip's reason names its need as
"needs <need>: <why>" (test/python/support.py `needs`); one that does not is need "unknown".
"""

import json
import os
import re
import sys
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEED = re.compile(r"^needs ([a-z0-9_-]+): (.*)$", re.S)  # ml_dtypes has an underscore


class CountingResult(unittest.TextTestResult):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.skip_records = []
        self.passed = 0
        self.seconds = {}  # test id -> wall seconds (its setUp/tearDown in it; setUpClass not)

    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        self.seconds[test.id()] = time.monotonic() - self._t0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.passed += 1

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        m = NEED.match(str(reason))
        need, why = (m.group(1), m.group(2)) if m else ("unknown", str(reason))
        tid = test.id()
        module = tid.split(".")[2] if tid.startswith("test.python.") and tid.count(".") >= 2 else tid
        self.skip_records.append({"lang": "py", "file": f"test/python/{module}.py", "test": tid.split(".", 3)[-1],
                                  "need": need, "why": why})


def main(argv):
    summary_path, names = argv[0], argv[1:]
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    broken = 0
    for name in names:
        try:
            suite.addTests(loader.loadTestsFromName(name))
        except Exception as exc:  # an import error: the module's tests cannot run
            broken += 1
            print(f"pyunit: cannot load {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    runner = unittest.TextTestRunner(resultclass=CountingResult, verbosity=1, stream=sys.stderr)
    res = runner.run(suite)
    # By test: a test whose subtests fail twice is one failed test; a setUpClass error is one.
    def test_id(t):  # a subtest's failure is its test's
        return getattr(t, "test_case", t).id()

    slow = sorted(((s, t) for t, s in res.seconds.items() if s >= 1), reverse=True)[:8]
    if slow:  # where a long job's time goes, for the runner's hints and for profiling
        print("pyunit: slowest: " + ", ".join(f"{t.split('.', 2)[-1]} {s:.1f} s" for s, t in slow), file=sys.stderr)
    failed = len({test_id(t) for t, _ in res.failures + res.errors} | {test_id(t) for t in res.unexpectedSuccesses}) + broken
    skipped = len(res.skipped)
    log = os.environ.get("NPU_BLOCK_GATE_TEST_SKIPS")
    lines = "".join(json.dumps(r) + "\n" for r in res.skip_records)
    if log and lines:
        with open(log, "a", encoding="utf-8") as f:
            f.write(lines)
    elif lines:
        sys.stderr.write("".join(f"skip: {r['file']} > {r['test']}: needs {r['need']}: {r['why']}\n" for r in res.skip_records))
    with open(summary_path, "w", encoding="utf-8") as f:
        json.dump({"passed": res.passed, "failed": failed, "skipped": skipped}, f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
