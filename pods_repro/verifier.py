"""math-verify in a sandbox: ``verify(gold, candidate, mode)`` with guards against hostile text.

The details: docs/design.md, "Module notes" (`pods_repro/verifier.py`).
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = [
    "WorkerStartError",
    "count",
    "stats",
    "string_guard",
    "tree_guard",
    "verify",
    "warmup",
    "worker_pid",
]

log = logging.getLogger(__name__)

# Guard limits (see the module docstring). Measured CPU time of math-verify parse+verify on this
# package's 2-core CI machine: 8,000 characters of ordinary text < 0.1 s; `$((((8))))$`-style
# nesting costs ~0.25 s at depth 6, ~0.35-0.55 s at depth 8, ~1.2 s at depth 10 and ~2.7 s at
# depth 20 (antlr full-context prediction), hence MAX_NESTING = 6 under CPU_BUDGET_S = 0.5. A set
# or tuple costs ~5 ms per element (`\\{4,4,...\\}` with 100 elements: 0.5 s), hence MAX_LIST_ITEMS.
MAX_VERIFY_CHARS = 8000
MAX_LATEX_ANSWER_CHARS = 1000  # mode "answer": longer candidates are not also read as LaTeX
MAX_GOLD_CHARS = 4000
MAX_NESTING = 6
MAX_LIST_ITEMS = 40
MAX_EXPONENT_DIGITS = 5
MAX_VALUE_DIGITS = 100_000
MAX_FACTORIAL_DIGITS = 4
MAX_TREE_NODES = 1000
CPU_BUDGET_S = 0.5
WALL_TIMEOUT_S = 5.0
STARTUP_TIMEOUT_S = 60.0
WORKER_MEMORY_BYTES = 2 << 30
MAX_REQUESTS_PER_WORKER = 50_000

_GUARDS: Counter[str] = Counter()
_GUARDS_LOCK = threading.Lock()


def count(reason: str) -> None:
    """Add one to the counter of ``reason`` in :func:`stats`."""
    with _GUARDS_LOCK:
        _GUARDS[reason] += 1


def stats(reset: bool = False) -> dict[str, int]:
    """How often each guard fired since import (or the last reset): e.g. {'nesting': 3, 'timeout': 1}."""
    with _GUARDS_LOCK:
        out = dict(_GUARDS)
        if reset:
            _GUARDS.clear()
    return out


# ----------------------------------------------------------------------------------------------
# Guards on text that goes to math-verify


_BRACKET_RE = re.compile(r"[{}\[\](),]")


def _bracket_stats(s: str) -> tuple[int, int]:
    """(deepest bracket nesting, most commas directly inside one bracket group) of s."""
    depth = deepest = widest = 0
    commas = [0]  # commas of the open group at each depth (index 0: outside all brackets)
    for c in _BRACKET_RE.findall(s):  # the loop runs over brackets and commas only
        if c == ",":
            if depth:
                commas[depth] += 1
                widest = max(widest, commas[depth])
        elif c in "{[(":
            depth += 1
            deepest = max(deepest, depth)
            if depth == len(commas):
                commas.append(0)
            commas[depth] = 0
        elif depth:
            depth -= 1
    return deepest, widest


def string_guard(s: str, limits: tuple | None = None) -> str | None:
    """Reason to refuse parsing ``s`` (``nesting``, ``list_size``), or None. ``limits``: as :func:`_limits`."""
    max_nesting, max_list_items = (MAX_NESTING, MAX_LIST_ITEMS) if limits is None else limits[5:7]
    deepest, widest = _bracket_stats(s)
    if deepest > max_nesting:
        return "nesting"
    if widest > max_list_items:
        return "list_size"
    return None


# ----------------------------------------------------------------------------------------------
# The math-verify worker processes
#
# A "zygote" process imports math-verify once and warms its caches; workers are os.fork()ed from
# it on demand (~10 ms, inheriting the warm state), and the parent talks to the current worker
# over a socket. Each request runs under a kernel CPU-time timer (ITIMER_PROF with the default
# SIGPROF action, which terminates the process even inside C code), so a hostile input kills only
# its worker; the next request gets a fresh fork. The parent also has a wall-clock safety net.

_HEADER = struct.Struct(">I")
_ZYGOTE_RUN_NAME = "__pods_verifier_zygote__"


class _Deadline(Exception):
    pass


class WorkerStartError(RuntimeError):
    """The math-verify process could not start (an environment problem, never the completion's fault)."""


def _write_msg(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, poller = [], None
    while n:
        if deadline is not None:
            if poller is None:
                poller = select.poll()  # poll, not select: no FD_SETSIZE limit in big trainer processes
                poller.register(fd, select.POLLIN)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(remaining * 1000):
                raise _Deadline
        chunk = os.read(fd, n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_msg(fd: int, deadline: float | None) -> Any:
    (n,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    return pickle.loads(_read_exact(fd, n, deadline))


class _Worker:
    """Parent-side handle of one forked worker: its socket and a pidfd to kill exactly that process."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock, self.pid, self.requests = sock, pid, 0
        try:
            self.pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):  # not Linux >= 5.3: fall back to the pid
            self.pidfd = None

    def kill(self) -> None:
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)
        except OSError:  # already gone
            pass
        self.close()

    def close(self) -> None:
        self.sock.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class _Verifier:
    """The zygote, the current worker, and the request/deadline logic (one request at a time)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.zygote: subprocess.Popen | None = None
        self.ctrl: socket.socket | None = None
        self.worker: _Worker | None = None

    # -- zygote
    def _forget_after_fork(self) -> None:
        # We are a forked copy of the process that owns these: close our copies, touch nothing else.
        if self.ctrl is not None:
            self.ctrl.close()
        if self.worker is not None:
            self.worker.close()
        self.zygote = self.ctrl = self.worker = None
        self.pid = os.getpid()

    def _start_zygote(self) -> None:
        parent_end, child_end = socket.socketpair()
        # The zygote runs this file by path (not `import pods_repro.verifier`), so pods/__init__ and torch
        # are never imported there; -I keeps the cwd and PYTHON* variables out; the parent's
        # sys.path is handed over so math-verify is found where we found it.
        paths = [os.path.abspath(p) for p in sys.path if p and os.path.abspath(p) != os.getcwd()]
        boot = (
            f"import sys, runpy; sys.path[:] = sys.argv[3:]; runpy.run_path(sys.argv[1], run_name={_ZYGOTE_RUN_NAME!r})"
        )
        cmd = [sys.executable, "-I", "-c", boot, os.path.abspath(__file__), str(child_end.fileno()), *paths]
        try:
            self.zygote = subprocess.Popen(
                cmd,
                pass_fds=(child_end.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        finally:
            child_end.close()
        self.ctrl = parent_end
        kind, info = _read_msg(self.ctrl.fileno(), time.monotonic() + STARTUP_TIMEOUT_S)
        if kind != "ready":
            raise RuntimeError(info)

    def _stop_zygote(self) -> None:
        if self.ctrl is not None:
            self.ctrl.close()
        if self.zygote is not None:
            try:
                self.zygote.kill()
                self.zygote.wait(timeout=5)
            except Exception:  # already gone
                pass
        self.zygote = self.ctrl = None

    def _ensure_zygote(self) -> None:
        if self.pid != os.getpid():
            self._forget_after_fork()
        if self.zygote is not None and self.zygote.poll() is None:
            return
        errors = []
        for _ in range(3):
            self._stop_zygote()
            try:
                self._start_zygote()
                return
            except (_Deadline, EOFError, OSError, RuntimeError) as e:
                errors.append(f"{type(e).__name__}: {str(e).strip()[-300:]}")
        self._stop_zygote()
        raise WorkerStartError(
            "the math-verify process did not start (" + " | ".join(errors) + "). "
            f"Check that `{sys.executable} -c 'import math_verify'` works (pip install 'math-verify>=0.7')."
        )

    # -- workers
    def _ensure_worker(self) -> _Worker:
        for _ in range(2):
            self._ensure_zygote()
            if self.worker is not None:
                return self.worker
            mine, theirs = socket.socketpair()
            try:
                socket.send_fds(self.ctrl, [b"F"], [theirs.fileno()])
                kind, pid = _read_msg(self.ctrl.fileno(), time.monotonic() + STARTUP_TIMEOUT_S)
            except (_Deadline, EOFError, OSError):
                mine.close()
                self._stop_zygote()  # a broken zygote is restarted by the next _ensure_zygote
                continue
            finally:
                theirs.close()
            self.worker = _Worker(mine, pid)
            return self.worker
        raise WorkerStartError("the math-verify zygote process could not fork a worker twice in a row")

    def _drop_worker(self, kill: bool) -> None:
        if self.worker is not None:
            self.worker.kill() if kill else self.worker.close()
        self.worker = None

    def warmup(self) -> None:
        with self.lock:
            self._ensure_worker()

    def run(self, request: tuple) -> tuple[bool, str | None] | None:
        """The worker's (equal, guard reason) for a request, or None if it was killed or missed the deadline."""
        with self.lock:
            for _attempt in range(2):
                worker = self._ensure_worker()
                try:
                    worker.requests += 1
                    _write_msg(worker.sock.fileno(), request)
                except OSError:  # it died before reading this request (killed from outside): fork another
                    count("worker_lost")
                    self._drop_worker(kill=True)
                    continue
                try:
                    result = _read_msg(worker.sock.fileno(), time.monotonic() + WALL_TIMEOUT_S)
                except (_Deadline, EOFError, OSError) as e:
                    # Killed by its CPU budget (EOF), or past the wall-clock safety net: this input gets 0.
                    reason = "wall_timeout" if isinstance(e, _Deadline) else "cpu_limit"
                    count(reason)
                    log.warning("math-verify worker stopped (%s) on a %d-char input", reason, len(request[2]))
                    self._drop_worker(kill=True)
                    return None
                if worker.requests >= MAX_REQUESTS_PER_WORKER:  # bound the growth of sympy/antlr caches
                    self._drop_worker(kill=True)
                return result
            return None

    def shutdown(self) -> None:
        with self.lock:
            if self.pid == os.getpid():
                self._drop_worker(kill=True)
                self._stop_zygote()
            else:
                self._forget_after_fork()


_VERIFIER = _Verifier()
atexit.register(_VERIFIER.shutdown)


def warmup() -> None:
    """Start the math-verify processes now (otherwise the first gsm8k/math score waits ~1-3 s for them)."""
    _VERIFIER.warmup()


def _limits() -> tuple:
    """Guard limits sent with each request (read at call time, so tests can change them)."""
    return (
        CPU_BUDGET_S,
        MAX_EXPONENT_DIGITS,
        MAX_VALUE_DIGITS,
        MAX_FACTORIAL_DIGITS,
        MAX_TREE_NODES,
        MAX_NESTING,
        MAX_LIST_ITEMS,
    )


def worker_pid() -> int | None:
    """Process id of the current worker (None before the first request or after a kill)."""
    worker = _VERIFIER.worker
    return None if worker is None else worker.pid


_MODES = ("text", "answer", "openr1")
_MATH_DELIMITER_RE = re.compile(r"(?<!\\)\$|\\\(|\\\[")


def _latex_like(candidate: str) -> bool:
    """May an answer also be read as LaTeX in ``$..$``? Short, and no math delimiters of its own."""
    return len(candidate) <= MAX_LATEX_ANSWER_CHARS and _MATH_DELIMITER_RE.search(candidate) is None


def verify(gold: str, candidate: str, mode: str = "text") -> float:
    """1.0 iff math-verify finds ``candidate`` equal to ``gold`` under ``mode`` (see the docstring), else 0.0.

    Every guard of the module docstring applies; a refused or killed request is 0.0. Never raises
    because of the text; raises :class:`WorkerStartError` if math-verify cannot run at all.
    """
    if mode not in _MODES:
        raise ValueError(f"unknown verify mode {mode!r}; choose one of: {', '.join(_MODES)}")
    if mode == "answer" and not _latex_like(candidate):
        mode = "text"
    if len(gold) > MAX_GOLD_CHARS:  # never shortened: a cut text can read as a different answer
        count("gold_too_long")
        return 0.0
    if len(candidate) > MAX_VERIFY_CHARS:
        count("too_long")
        return 0.0
    result = _VERIFIER.run((mode, gold, candidate, _limits()))
    if result is None:
        return 0.0
    equal, reason = result
    if reason is not None:
        count(reason)
    return float(equal)


# ----------------------------------------------------------------------------------------------
# Zygote and worker side (runs in the child processes; only there are sympy and math-verify imported)

_CALCULUS = ("Sum", "Product", "Integral", "Limit", "Derivative")
_FACTORIALS = ("factorial", "factorial2", "subfactorial", "gamma", "binomial", "RisingFactorial", "FallingFactorial")


def _magnitude(expr: Any, limits: tuple, budget: list[int], depth: int = 0) -> float:
    """Upper bound on log10|value| of a parsed expression; ValueError(reason) when it is too big.

    Symbols and constants count as 0.5 (values up to ~3): what matters is that sympy never has to
    build a huge integer while simplifying or evaluating numerically.
    """
    import sympy

    max_exp, max_value, max_fact = limits[1:4]
    budget[0] -= 1
    if budget[0] < 0 or depth > 200:
        raise ValueError("tree_size")
    if isinstance(expr, sympy.Integer):
        return abs(int(expr)).bit_length() * 0.30103
    if isinstance(expr, sympy.Rational):
        return max(abs(expr.p).bit_length(), expr.q.bit_length()) * 0.30103
    if isinstance(expr, sympy.Float):
        _, man, exp, bc = expr._mpf_
        return max(0.5, abs(exp + bc) * 0.30103) if man else 0.5
    if isinstance(expr, sympy.MatrixBase):
        return max((_magnitude(e, limits, budget, depth + 1) for e in expr), default=0.5)
    if not isinstance(expr, sympy.Basic):
        return 0.5
    name = type(expr).__name__
    if name in _CALCULUS:
        raise ValueError("calculus")
    if isinstance(expr, (sympy.Pow, sympy.exp)):
        if isinstance(expr, sympy.exp):  # e^a: digits <= 0.44 * |a|
            base, exp = 0.44, _magnitude(expr.args[0], limits, budget, depth + 1)
        else:
            base = _magnitude(expr.base, limits, budget, depth + 1)
            exp = _magnitude(expr.exp, limits, budget, depth + 1)
        if exp > max_exp:
            raise ValueError("huge_exponent")
        size = max(base, 0.44) * 10**exp  # digits(b^e) <= digits(b) * |e|
    elif name in _FACTORIALS:
        arg = max((_magnitude(a, limits, budget, depth + 1) for a in expr.args), default=0.5)
        if arg > max_fact:
            raise ValueError("huge_factorial")
        size = 10**arg * max(arg, 1.0)  # digits(n!) <= n * log10(n)
    else:
        args = [_magnitude(a, limits, budget, depth + 1) for a in expr.args]
        if not args:
            return 0.5
        size = sum(args) if isinstance(expr, sympy.Mul) else max(args) + 0.5
    if size > max_value:
        raise ValueError("huge_value")
    return size


def tree_guard(items: list, limits: tuple | None = None) -> str | None:
    """Reason to refuse parsed math-verify results before ``verify`` (``huge_exponent``, ...), or None.

    ``items``: sympy expressions (strings are skipped); ``limits``: as :func:`_limits` (the default).
    Runs in the worker; the parent calls it only in tests (it then imports sympy).
    """
    if limits is None:
        limits = _limits()
    budget = [limits[4]]
    for item in items:
        if isinstance(item, str):
            continue
        try:
            _magnitude(item, limits, budget)
        except ValueError as e:
            return str(e)
    return None


_REQUEST_LIMITS: list[tuple] = [()]  # worker: the limits of the request being handled
_REFUSED: list[str] = []  # worker: what the guarded parsers refused during that request


def _guard_parsers(parser: Any) -> None:
    """Put :func:`string_guard` in front of math-verify's two parsers (zygote, once).

    math-verify extracts candidate answers from the text by regex and parses each with
    ``parse_latex_cached`` (antlr, the costly step) or ``parse_expr_cached``. Guarding these calls
    judges each extracted answer, not the reasoning around it: a refused candidate is unparsable
    to math-verify, which goes on to the next one exactly as it does after a parse error.
    """
    for name in ("parse_latex_cached", "parse_expr_cached"):
        parse = getattr(parser, name)

        def guarded(text: str, _parse: Callable[[str], Any] = parse) -> Any:
            reason = string_guard(text, _REQUEST_LIMITS[0])
            if reason is not None:
                _REFUSED.append(reason)
                raise ValueError(reason)
            return _parse(text)

        setattr(parser, name, guarded)


def _worker_handle(request: tuple, mv: Any, openr1_pred_config: list) -> tuple[bool, str | None]:
    mode, gold_text, pred_text, limits = request
    _REQUEST_LIMITS[0] = limits
    _REFUSED.clear()
    if mode == "openr1":
        gold = mv.parse(gold_text, extraction_mode="first_match", parsing_timeout=None)
        readings = [
            lambda: mv.parse(
                pred_text, extraction_config=openr1_pred_config, extraction_mode="first_match", parsing_timeout=None
            )
        ]
    else:
        gold = mv.parse("$" + gold_text + "$", parsing_timeout=None)
        readings = [lambda: mv.parse(pred_text, parsing_timeout=None)]
        if mode == "answer":  # the answer also read as LaTeX, as the gold is
            readings.append(lambda: mv.parse("$" + pred_text + "$", parsing_timeout=None))
    if not gold:
        return False, "gold_refused" if _REFUSED else "gold_unparsed"
    reason = tree_guard(gold, limits)
    if reason is not None:
        return False, reason
    _REFUSED.clear()
    refused = None
    for read in readings:
        pred = read()
        if not pred:
            continue
        reason = tree_guard(pred, limits)
        if reason is None and mv.verify(gold, pred, timeout_seconds=None):
            return True, None
        refused = refused or reason
    return False, refused or (_REFUSED[0] if _REFUSED else None)


def _worker_loop(fd: int, mv: Any, config: list) -> None:
    signal.signal(signal.SIGPROF, signal.SIG_DFL)  # SIGPROF terminates: the CPU budget is kernel-enforced
    while True:
        try:
            request = _read_msg(fd, None)
        except (EOFError, OSError):
            return  # the parent closed the socket or died
        signal.setitimer(signal.ITIMER_PROF, request[3][0])
        try:
            result = _worker_handle(request, mv, config)
        except BaseException as e:  # MemoryError under the rlimit, RecursionError, sympy bugs
            result = (False, "error_" + type(e).__name__)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        _write_msg(fd, result)


_WARMUP = [  # parsed and verified once in the zygote, so that forked workers start warm
    ("text", "\\frac{1}{2}", "0.5"),
    ("text", "18", "The answer is $18$."),
    ("text", "(3, \\frac{\\pi}{2})", "\\left( 3, \\frac{\\pi}{2} \\right)"),
    ("text", "\\{1,3\\}", "x \\in [2,5)"),
    ("text", "6 - 5i", "\\sqrt{-25} + 6"),
    ("text", "10\\%", "\\sin(x)^2 + \\cos(x)^2 = \\log(e)"),
    ("text", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "x^{2} - 2x + 1 = 0"),
    ("text", "\\text{Evelyn}", "\\text{(C)}"),
    ("text", "e^{e^{e}}", "x^{x^{x^{x}}} + 5! + \\binom{5}{2}"),  # the paths hostile text takes to the guards
    ("text", "10^{3}", "\\sum_{i=1}^{3} i + \\int_0^1 x dx + \\prod_{k=1}^{3} k + \\Gamma(3)"),
    ("text", "1", "\\tan(\\pi/2) + \\lim_{x\\to\\infty} 1/x"),
    ("answer", "[2,5)", "[2, 5)"),
    ("answer", "\\sqrt{2}", "\\text{18}"),
    ("openr1", "#### 18", "so \\boxed{18}"),
]


def _zygote_main(ctrl_fd: int) -> None:
    import resource
    import socket as socket_mod
    import traceback

    ctrl = socket_mod.socket(fileno=ctrl_fd)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    except (ValueError, OSError):
        pass
    try:
        logging.disable(logging.CRITICAL)  # math-verify warns that its own timeouts are disabled
        import math_verify as mv
        from latex2sympy2_extended import NormalizationConfig
        from math_verify import parser as mv_parser

        _guard_parsers(mv_parser)

        config = [
            mv.LatexExtractionConfig(
                normalization_config=NormalizationConfig(
                    nits=False, malformed_operators=False, basic_latex=True, equations=True, boxed="all", units=True
                ),
                boxed_match_priority=0,
                try_extract_without_anchor=False,
            )
        ]
        limits = (60.0, *_limits()[1:])
        for mode, gold, pred in _WARMUP:
            _worker_handle((mode, gold, pred, limits), mv, config)
    except BaseException:
        _write_msg(ctrl_fd, ("error", traceback.format_exc(limit=3)))
        return
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps finished workers
    _write_msg(ctrl_fd, ("ready", os.getpid()))
    while True:
        try:
            msg, fds, _, _ = socket_mod.recv_fds(ctrl, 16, 1)
        except OSError:
            return
        if not msg:
            return  # the parent closed the control socket or died
        if not fds:
            continue
        pid = os.fork()
        if pid == 0:  # the worker
            try:
                ctrl.close()
                _worker_loop(fds[0], mv, config)
            finally:
                os._exit(0)
        os.close(fds[0])
        _write_msg(ctrl_fd, ("forked", pid))


if __name__ == _ZYGOTE_RUN_NAME:
    _zygote_main(int(sys.argv[2]))
