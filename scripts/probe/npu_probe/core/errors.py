"""The two ways a probe run ends early, each with its exit code."""

from npu_probe.core.contract import EXIT_BAD_INPUT, EXIT_INFRA


class ProbeError(Exception):
    """Bad input: a path the user gave or the tree holds is wrong (exit 2)."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, path, problem):
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem

    def one_line(self):
        return f"{self.path}: {self.problem}"


class TreeCrash(Exception):
    """Code inside the user's tree raised (exit 3). Keeps the original for the log."""

    exit_code = EXIT_INFRA

    def __init__(self, where, exc):
        super().__init__(f"{where}: {type(exc).__name__}: {exc}")
        self.where = where
        self.exc = exc

    def one_line(self):
        msg = " ".join(str(self.exc).split())  # one line, whatever the message held
        return f"{self.where}: {type(self.exc).__name__}: {msg}"


class MissingDependency(TreeCrash):
    """A package the tree's convention needs (e.g. transformers) is absent (exit 3)."""


class EnvironmentProblem(Exception):
    """The machine cannot run this tree (no NPU, a package or Python version
    missing, no local HF snapshot): exit 3, infrastructure, before anything runs."""

    exit_code = EXIT_INFRA

    def __init__(self, where, problem):
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem

    def one_line(self):
        return f"{self.where}: {' '.join(str(self.problem).split())}"
