"""User-facing errors.

Every error a user can cause by bad input derives from :class:`SteerEnvsError`. The CLI catches this one
class and prints its message (never a traceback), so each message must say what was wrong *and* how to fix it.
"""

from __future__ import annotations


class SteerEnvsError(Exception):
    """Base class of errors caused by input the user can correct."""


class DataNotFoundError(SteerEnvsError):
    """No data folder could be located, or a data file is missing."""


class DataFormatError(SteerEnvsError):
    """A data file has a malformed line; the message names the file and the line number."""


class UnknownNameError(SteerEnvsError, KeyError):
    """An unknown registry key (benchmark, split, metric, executor kind, ...). The message lists valid names."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class ServiceError(SteerEnvsError):
    """A service an episode depends on (a model server, a retrieval server) failed after its retries.

    Executors turn it into a failed turn: the episode ends with ``info["failure"]`` naming the reason, and a
    long run goes on with the next episode instead of crashing.
    """


class InvalidActionError(SteerEnvsError, ValueError):
    """An environment received an action outside its action space."""


def unknown_name(kind: str, name: object, valid: list[str] | tuple[str, ...], hint: str = "") -> UnknownNameError:
    """Build the standard 'unknown X' error listing the valid choices."""
    msg = f"unknown {kind} {name!r}; valid {kind}s: {', '.join(sorted(map(str, valid)))}"
    if hint:
        msg += f". {hint}"
    return UnknownNameError(msg)
