"""Progress lines on stderr, everything (tree output, tracebacks) in probe.log."""

import io
import sys
import time


class ProbeLog:
    """`step` lines go to stderr (prefixed `probe: `) and the log; `detail`
    only to the log. The log is kept in memory until a run dir is known, then
    streamed to `probe.log` there."""

    def __init__(self, stderr=None, echo_details=False):
        self._stderr = stderr if stderr is not None else sys.stderr
        self._buffer = io.StringIO()
        self._file = None
        self.echo_details = echo_details
        self._t0 = time.monotonic()

    def attach(self, path, append=False):
        """Start writing the log to `path` (truncating, or appending), flushing what came before."""
        self._file = open(path, "a" if append else "w", encoding="utf-8")
        if append and self._file.tell() > 0:
            self._file.write("\n")
        self._file.write(self._buffer.getvalue())
        self._file.flush()

    def _write_log(self, text):
        if self._file is not None:
            self._file.write(text)
            self._file.flush()
        else:
            self._buffer.write(text)

    def step(self, message):
        line = f"probe: {message}"
        self._stderr.write(line + "\n")
        self._stderr.flush()
        self._write_log(f"[{time.monotonic() - self._t0:8.2f}s] {line}\n")

    def detail(self, message):
        text = message if message.endswith("\n") else message + "\n"
        self._write_log(text)
        if self.echo_details:
            self._stderr.write(text)
            self._stderr.flush()

    def error(self, one_line):
        line = f"probe: error: {one_line}"
        self._stderr.write(line + "\n")
        self._stderr.flush()
        self._write_log(line + "\n")

    def tree_output(self):
        """A text stream for the tree's own prints (stdout redirect target): into the log, with
        the `.buffer` and `fileno()` model code may use, never onto the protocol channel."""
        return _TreeSink(self)

    def fileno(self):
        """The log file's descriptor (probe.log): what `os.write(sys.stdout.fileno(), ...)` in
        the tree writes to, instead of this process's stdout or stderr (the events)."""
        if self._file is None:
            raise io.UnsupportedOperation("fileno: probe.log is not open yet")
        self._file.flush()
        return self._file.fileno()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None


class _TreeSink(io.TextIOBase):
    """sys.stdout while the tree runs: a text stream (UTF-8) whose `.buffer` takes bytes and whose
    `fileno()` is probe.log's, so code that writes to stdout's bytes or descriptor works."""

    def __init__(self, log):
        self._log = log
        self.buffer = _TreeBytes(self)

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "replace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self._log.fileno()

    def write(self, s):
        if s:
            self._log._write_log(s)
            if self._log.echo_details:
                self._log._stderr.write(s)
        return len(s)

    def flush(self):
        if self._log._file is not None:
            self._log._file.flush()


class _TreeBytes(io.RawIOBase):
    """sys.stdout.buffer while the tree runs: bytes decoded (UTF-8, bad bytes replaced) into the log."""

    def __init__(self, text):
        self._text = text

    def writable(self):
        return True

    def write(self, b):
        data = bytes(b)
        self._text.write(data.decode("utf-8", "replace"))
        return len(data)

    def fileno(self):
        return self._text.fileno()

    def flush(self):
        self._text.flush()
