"""The hub that runs many env steps on one thread (steer_envs.cooperative): tasks wake in the order their sockets
do, deadlines raise, locks held across a wait do not deadlock the thread, off-thread calls and sub-tasks let the
others run, cancelled tasks run their ``finally`` blocks; outside a hub every helper blocks as its plain
counterpart does."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from steer_envs import cooperative
from steer_envs.cooperative import Hub
from steer_envs.errors import SteerEnvsError


def _reader(sock: socket.socket, log: list, name: str, deadline: float | None = None):
    def read() -> bytes:
        log.append(f"{name} waits")
        cooperative.wait_readable(sock, deadline)
        data = sock.recv(16)
        log.append(f"{name} read {data.decode()}")
        return data

    return read


def test_tasks_wake_in_the_order_their_sockets_become_readable():
    hub, log = Hub(), []
    pairs = [socket.socketpair() for _ in range(2)]
    try:
        first = hub.spawn(_reader(pairs[0][0], log, "a"))
        second = hub.spawn(_reader(pairs[1][0], log, "b"))
        hub.run_ready()
        assert log == ["a waits", "b waits"] and not first.done and not second.done
        pairs[1][1].send(b"two")  # b's reply comes first
        hub.run_until(lambda: second.done)
        assert log[-1] == "b read two" and not first.done
        pairs[0][1].send(b"one")
        hub.run_until(lambda: first.done)
        assert (first.result, second.result) == (b"one", b"two") and not hub.tasks
    finally:
        hub.close()
        for pair in pairs:
            for end in pair:
                end.close()


def test_a_wait_past_its_deadline_raises_timeout_and_leaves_the_socket_unwatched():
    hub, log = Hub(), []
    a, b = socket.socketpair()
    try:
        task = hub.spawn(_reader(a, log, "a", deadline=time.monotonic() + 0.05))
        hub.run_until(lambda: task.done)
        assert isinstance(task.error, TimeoutError) and log == ["a waits"]
        b.send(b"late")  # nothing is woken by the late reply
        hub.poll(block=False)
        hub.run_ready()
    finally:
        hub.close()
        a.close()
        b.close()


def test_a_lock_held_across_a_wait_lets_the_other_tasks_run_and_then_passes_on():
    hub, lock, order = Hub(), threading.Lock(), []

    def holder() -> None:
        with cooperative.holding(lock):
            order.append("holder in")
            cooperative.sleep(0.02)  # a request while holding the lock (the context-length lookup does this)
            order.append("holder out")

    def other() -> None:
        order.append("other runs")

    def waiter() -> None:
        with cooperative.holding(lock):
            order.append("waiter in")

    try:
        tasks = [hub.spawn(holder), hub.spawn(waiter), hub.spawn(other)]
        hub.run_until(lambda: all(t.done for t in tasks))
    finally:
        hub.close()
    assert order == ["holder in", "other runs", "holder out", "waiter in"]
    assert all(t.error is None for t in tasks) and not lock.locked()


def test_gather_runs_calls_as_tasks_in_order_and_raises_the_first_error():
    hub = Hub()

    def slow_then(value: int, delay: float):
        def call() -> int:
            cooperative.sleep(delay)
            return value

        return call

    def fails() -> int:
        raise ValueError("the second call failed")

    try:
        ok = hub.spawn(lambda: hub.gather([slow_then(1, 0.03), slow_then(2, 0.0), slow_then(3, 0.01)]))
        bad = hub.spawn(lambda: hub.gather([slow_then(1, 0.0), fails]))
        hub.run_until(lambda: ok.done and bad.done)
    finally:
        hub.close()
    assert ok.result == [1, 2, 3]
    assert isinstance(bad.error, ValueError)


def test_an_offloaded_call_runs_on_another_thread_while_the_other_tasks_run():
    hub, released, order = Hub(), threading.Event(), []

    def blocking() -> str:
        assert released.wait(5)  # set by the other task: it ran while this call blocked
        return threading.current_thread().name

    def other() -> None:
        order.append("other")
        released.set()

    try:
        offloaded = hub.spawn(lambda: cooperative.offload(blocking))
        runs = hub.spawn(other)
        hub.run_until(lambda: offloaded.done and runs.done)
    finally:
        hub.close()
    assert offloaded.error is None and offloaded.result.startswith("steer-hub-offload") and order == ["other"]


def test_cancel_and_close_stop_waiting_tasks_and_run_their_finally_blocks():
    hub, cleaned = Hub(), []
    pairs = [socket.socketpair() for _ in range(3)]

    def waits(name: str, sock: socket.socket):
        def call() -> None:
            try:
                cooperative.wait_readable(sock, None)
            finally:
                cleaned.append(name)

        return call

    try:
        first, second = hub.spawn(waits("first", pairs[0][0])), hub.spawn(waits("second", pairs[1][0]))
        never = hub.spawn(waits("never started", pairs[2][0]))
        hub.cancel(never)  # not started: it never runs
        hub.run_ready()
        hub.cancel(first)
        assert cleaned == ["first"] and first.dead
        hub.close()
        assert cleaned == ["first", "second"] and second.dead
        with pytest.raises(SteerEnvsError, match="closed hub"):
            hub.spawn(lambda: None)
    finally:
        for pair in pairs:
            for end in pair:
                end.close()


def test_outside_a_hub_the_helpers_block_as_their_plain_counterparts():
    lock = threading.Lock()
    assert cooperative.current_hub() is None
    with cooperative.holding(lock):
        assert lock.locked()
    assert not lock.locked()
    start = time.monotonic()
    cooperative.sleep(0.01)
    assert time.monotonic() - start >= 0.01
    assert cooperative.offload(lambda: threading.current_thread()) is threading.current_thread()
    a, b = socket.socketpair()
    cooperative.wait_readable(a, None)  # returns at once: the caller's own read is what blocks
    a.close()
    b.close()


def test_an_interrupt_inside_a_task_reaches_the_driver():
    """Ctrl-C arrives in whichever task runs (they all run on the driver's thread): it stops the driver, not just the
    task, and the task is finished with it as its error."""
    hub = Hub()

    def interrupted() -> None:
        raise KeyboardInterrupt

    task = hub.spawn(interrupted)
    with pytest.raises(KeyboardInterrupt):
        hub.run_until(lambda: task.done)
    assert task.done and isinstance(task.error, KeyboardInterrupt) and not hub.tasks
    hub.close()


def test_misuse_says_what_is_wrong():
    hub = Hub()
    with pytest.raises(SteerEnvsError, match="ran out of tasks"):
        hub.run_until(lambda: False)
    with pytest.raises(SteerEnvsError, match="only a task of this hub"):
        hub.sleep(0.0)
    errors: list[BaseException] = []

    def drive_from_elsewhere() -> None:
        try:
            hub.run_ready()
        except SteerEnvsError as exc:
            errors.append(exc)

    thread = threading.Thread(target=drive_from_elsewhere)
    thread.start()
    thread.join()
    assert errors and "thread that made it" in str(errors[0])
    hub.close()
