"""Many env steps in flight on one thread: each step a greenlet that yields while it waits on a socket.

Why: an env step on a served executor is a few hundred microseconds of Python (the prompt, a BM25 search, the
scores) around a wait of tens to thousands of milliseconds on the model server. With a thread per step in flight,
every request hands the interpreter lock over four or five times (the worker wakes, sends, wakes on the reply,
signals the learner, the learner wakes), and at hundreds of requests a second those hand-overs cost more CPU than
the steps' own work (``BENCHMARKS.md``, *Episodes in flight*, measures both side by side). A :class:`Hub` runs the
steps as greenlets on the thread that drives it: a step runs until it would wait, then the hub runs the next one,
and one ``select`` call wakes every step whose reply arrived.

What yields: code that waits through this module (:func:`wait_readable`, :func:`sleep`, :func:`acquire`,
:func:`offload`, :meth:`Hub.gather`): the ``openai:`` backend's plain-HTTP reads, its retry pauses, its request
slots and its context lookup, and its HTTPS exchanges (on a helper thread). Outside a hub's task every one of
these behaves as its blocking counterpart, so the same code serves threads and processes. Code that blocks in
any other way (a plugin executor's own HTTP client) still works under a hub but holds the other steps up while it
waits: such executors run on threads (:func:`steer_envs.executors.registry.waits_cooperatively`).
"""

from __future__ import annotations

import heapq
import itertools
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import greenlet

from .errors import SteerEnvsError

#: how often a task waiting for a lock another task holds looks again (contention is rare: a one-time lookup)
LOCK_POLL_S = 0.001
#: how often the deadlines of socket waits are checked (a reply cancels its deadline, so a heap of them would
#: mostly hold cancelled entries; a periodic sweep of the waits in progress is cheaper and exact to this)
DEADLINE_SWEEP_S = 0.25
#: helper threads for blocking calls a task hands off (:func:`offload`)
OFFLOAD_THREADS = 32


class Task(greenlet.greenlet):
    """One unit of work on a hub; ``result`` / ``error`` once ``done``."""

    def __init__(self, hub: Hub, fn: Callable[[], Any], on_done: Callable[[Task], None] | None) -> None:
        super().__init__(self._main, parent=hub.loop)
        self.hub, self.fn, self.on_done = hub, fn, on_done
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.wake_token = 0  # bumped on every wake-up: a timer or a socket event from an earlier wait is stale

    def _main(self, *_: Any) -> None:
        try:
            self.result = self.fn()
        except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C lands in whichever task runs: it stops the driver
            self.error = exc
            raise
        except BaseException as exc:  # noqa: BLE001 - handed to whoever collects the task
            self.error = exc
        finally:
            self.done = True
            self.hub.tasks.discard(self)
            if self.on_done is not None:
                self.on_done(self)


class Hub:
    """Runs :class:`Task` greenlets on the thread that drives it (:meth:`run_ready`, :meth:`run_until`).

    ``spawn`` queues a task; the driver runs ready tasks until each finishes or waits, then waits for the first
    socket, timer or hand-off that wakes one. A hub belongs to the thread that made it."""

    def __init__(self) -> None:
        self.loop = greenlet.getcurrent()
        self.thread = threading.get_ident()
        self.tasks: set[Task] = set()  # spawned and not finished
        self._ready: deque[tuple[Task, Any]] = deque()
        self._timers: list[tuple[float, int, Task, int]] = []  # sleeps, in order
        self._deadlines: dict[Task, tuple[float, int]] = {}  # socket waits' deadlines (most end on their reply)
        self._next_sweep = 0.0
        self._order = itertools.count()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._handed_back: deque[Task] = deque()  # tasks whose off-thread call finished (appended by that thread)
        self._offload: ThreadPoolExecutor | None = None
        self.closed = False

    # -- the driver's side ----------------------------------------------------------------------------------------
    def spawn(self, fn: Callable[[], Any], on_done: Callable[[Task], None] | None = None) -> Task:
        """Queue ``fn()`` as a task (it starts at the next :meth:`run_ready`); ``on_done(task)`` when it ends."""
        if self.closed:
            raise SteerEnvsError("spawn() on a closed hub")
        task = Task(self, fn, on_done)
        self.tasks.add(task)
        self._ready.append((task, None))
        return task

    def run_ready(self) -> None:
        """Run every ready task until it finishes or waits (tasks a run makes ready run too)."""
        self._check_thread()
        if greenlet.getcurrent() is not self.loop:
            raise SteerEnvsError("a hub is driven from the greenlet that made it, not from one of its tasks")
        while self._ready:
            task, value = self._ready.popleft()
            if not task.dead:
                task.switch(value)

    def poll(self, block: bool = True) -> None:
        """Make ready the tasks whose socket, timer or hand-off came (``block``: wait until one does)."""
        timeout = None if block else 0.0
        if self._timers and block:
            timeout = max(0.0, self._timers[0][0] - time.monotonic())
        if self._deadlines and block:  # socket deadlines are swept every DEADLINE_SWEEP_S, not kept in order
            timeout = DEADLINE_SWEEP_S if timeout is None else min(timeout, DEADLINE_SWEEP_S)
        for key, _ in self._selector.select(timeout):
            if key.data is None:
                self._drain_wake()
            else:
                task, token = key.data
                self._selector.unregister(key.fileobj)
                self._wake(task, token, "ready")
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, task, token = heapq.heappop(self._timers)
            self._wake(task, token, "timeout")
        if self._deadlines and now >= self._next_sweep:
            self._next_sweep = now + DEADLINE_SWEEP_S
            for task, (deadline, token) in list(self._deadlines.items()):
                if deadline <= now:
                    self._wake(task, token, "timeout")

    def run_until(self, condition: Callable[[], bool]) -> None:
        """Drive the hub until ``condition()`` holds; an error if it cannot (no task left to run)."""
        while True:
            self.run_ready()
            if condition():
                return
            if not self.tasks:
                raise SteerEnvsError("the hub ran out of tasks before the condition it was driven for held")
            self.poll()

    def cancel(self, task: Task) -> None:
        """Stop ``task``: ``GreenletExit`` is raised where it waits (its ``finally`` blocks run, its connection
        closes); one not started yet never starts."""
        self._check_thread()
        if task.dead:
            return
        self.tasks.discard(task)
        self._deadlines.pop(task, None)
        task.throw(greenlet.GreenletExit)

    def close(self) -> None:
        """Stop every unfinished task (see :meth:`cancel`), then release the selector and helper threads."""
        if self.closed:
            return
        self.closed = True
        self._ready.clear()
        self._timers.clear()
        if threading.get_ident() == self.thread:
            for task in list(self.tasks):
                self.cancel(task)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
        if self._offload is not None:
            self._offload.shutdown(wait=False, cancel_futures=True)

    # -- the tasks' side ------------------------------------------------------------------------------------------
    def wait_readable(self, sock: socket.socket, deadline: float | None) -> None:
        """Park the running task until ``sock`` has bytes to read; ``TimeoutError`` past ``deadline`` (monotonic)."""
        task = self._running()
        token = task.wake_token
        self._selector.register(sock, selectors.EVENT_READ, (task, token))
        if deadline is not None:
            self._deadlines[task] = (deadline, token)
        try:
            why = self.loop.switch()
        finally:
            self._deadlines.pop(task, None)
            if sock.fileno() >= 0 and sock in self._selector.get_map():
                self._selector.unregister(sock)
        if why == "timeout":
            raise TimeoutError("no reply before the deadline")

    def sleep(self, seconds: float) -> None:
        """Park the running task for ``seconds``."""
        task = self._running()
        heapq.heappush(self._timers, (time.monotonic() + seconds, next(self._order), task, task.wake_token))
        self.loop.switch()

    def park(self) -> Any:
        """Park the running task until :meth:`resume` (what it was resumed with is returned)."""
        self._running()
        return self.loop.switch()

    def resume(self, task: Task, value: Any = None) -> None:
        """Make a parked task ready (from this hub's thread)."""
        self._wake(task, task.wake_token, value)

    def gather(self, calls: Iterable[Callable[[], Any]]) -> list[Any]:
        """Run ``calls`` as tasks of their own and wait for all; their results in order (the first error raised)."""
        me = self._running()
        tasks: list[Task] = []
        pending = [0]

        def finished(_: Task) -> None:
            pending[0] -= 1
            if pending[0] == 0:
                self.resume(me)

        for call in calls:
            pending[0] += 1
            tasks.append(self.spawn(call, on_done=finished))
        if tasks:
            self.park()
        for task in tasks:
            if task.error is not None:
                raise task.error
        return [task.result for task in tasks]

    def offload(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on a helper thread while the running task waits (for calls that block and cannot yield)."""
        task = self._running()
        if self._offload is None:
            self._offload = ThreadPoolExecutor(OFFLOAD_THREADS, thread_name_prefix="steer-hub-offload")
        future = self._offload.submit(fn)

        def handed_back(_: object) -> None:
            self._handed_back.append(task)
            try:
                self._wake_w.send(b"\0")
            except OSError:  # the hub closed meanwhile: nobody waits for this task any more
                pass

        future.add_done_callback(handed_back)
        self.park()
        return future.result()

    # -- internals ------------------------------------------------------------------------------------------------
    def _running(self) -> Task:
        task = greenlet.getcurrent()
        if not isinstance(task, Task) or task.hub is not self:
            raise SteerEnvsError("only a task of this hub can wait on it")
        return task

    def _wake(self, task: Task, token: int, value: Any) -> None:
        if token != task.wake_token or task.dead:
            return  # an earlier wait's socket event or timer: the task has moved on
        task.wake_token += 1
        self._ready.append((task, value))

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass
        while self._handed_back:
            self.resume(self._handed_back.popleft())

    def _check_thread(self) -> None:
        if threading.get_ident() != self.thread:
            raise SteerEnvsError("a hub is driven from the thread that made it (greenlets cannot change threads)")


class TaskQueue:
    """Calls run as tasks of a hub, at most ``limit`` at once (the others wait their turn, in order); :meth:`next`
    gives the finished ones in the order they finished, each with the key it was submitted with. The async vector env
    and the greenlets rollout pool both keep their work in flight this way.

    ``hub``: the hub to run on; None makes one on first use (on the thread that first drives the queue)."""

    def __init__(self, limit: int, hub: Hub | None = None) -> None:
        self.limit = limit
        self._hub = hub
        self._waiting: deque[tuple[Any, Callable[[], Any]]] = deque()
        self._running: dict[Task, Any] = {}
        self._finished: deque[tuple[Any, Task]] = deque()

    @property
    def hub(self) -> Hub:
        if self._hub is None:
            self._hub = Hub()
        return self._hub

    @property
    def busy(self) -> bool:
        """Whether a call waits, runs, or has finished without :meth:`next` having returned it."""
        return bool(self._waiting or self._running or self._finished)

    def submit(self, key: Any, fn: Callable[[], Any]) -> None:
        """Queue ``fn()`` under ``key``; it starts at once if fewer than ``limit`` run (at the next run of the hub)."""
        self._waiting.append((key, fn))
        self._start_waiting()

    def run_ready(self) -> None:
        """Run the started calls until each finishes or waits (a served call's request is then out)."""
        self.hub.run_ready()

    def next(self) -> tuple[Any, Task]:
        """The first call to finish that :meth:`next` has not returned yet (the hub runs until there is one)."""
        self.hub.run_until(lambda: bool(self._finished))
        return self._finished.popleft()

    def cancel(self) -> None:
        """Drop the waiting calls and stop the running ones (see :meth:`Hub.cancel`)."""
        self._waiting.clear()
        for task in list(self._running):
            self.hub.cancel(task)

    def close(self) -> None:
        """:meth:`cancel`, then close the hub (if one was made)."""
        self.cancel()
        if self._hub is not None:
            self._hub.close()

    def _start_waiting(self) -> None:
        while self._waiting and len(self._running) < self.limit:
            key, fn = self._waiting.popleft()
            self._running[self.hub.spawn(fn, on_done=self._done)] = key

    def _done(self, task: Task) -> None:
        self._finished.append((self._running.pop(task), task))
        self._start_waiting()


def current_hub() -> Hub | None:
    """The hub whose task is running here, or None (a plain thread, the hub's own driver)."""
    return getattr(greenlet.getcurrent(), "hub", None)


def wait_readable(sock: socket.socket, deadline: float | None) -> None:
    """Inside a hub's task: yield until ``sock`` is readable. Elsewhere: nothing (the caller's read blocks)."""
    hub = current_hub()
    if hub is not None:
        hub.wait_readable(sock, deadline)


def sleep(seconds: float) -> None:
    """``time.sleep`` that lets the hub's other tasks run meanwhile."""
    hub = current_hub()
    if hub is None:
        time.sleep(seconds)
    else:
        hub.sleep(seconds)


def acquire(lock: Any) -> None:
    """``lock.acquire()`` (a lock or a semaphore) that, inside a hub's task, lets the other tasks run while it
    waits (a task that blocked the thread on a lock another task holds would never see it released)."""
    hub = current_hub()
    if hub is None:
        lock.acquire()
        return
    while not lock.acquire(blocking=False):
        hub.sleep(LOCK_POLL_S)


@contextmanager
def holding(lock: Any) -> Iterator[None]:
    """``with lock:`` through :func:`acquire`."""
    acquire(lock)
    try:
        yield
    finally:
        lock.release()


def offload(fn: Callable[[], Any]) -> Any:
    """``fn()``; inside a hub's task on a helper thread, so the other tasks run while it blocks."""
    hub = current_hub()
    return fn() if hub is None else hub.offload(fn)


__all__ = ["Hub", "Task", "TaskQueue", "acquire", "current_hub", "holding", "offload", "sleep", "wait_readable"]
