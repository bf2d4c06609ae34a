"""Signal dispositions for the processes the tests start and then signal (issue 40).

A suite started in the background (``pytest &`` in a script, ``nohup``) inherits SIGINT ignored,
and an ignored signal stays ignored across ``exec``: the quiz never saw the Ctrl-C the test typed
and the test waited 79-137 s to fail. Every test that sends a signal starts its child with
:func:`default_signals` as ``preexec_fn``, so the child handles the signals as it would in a
terminal, however the suite was started."""

from __future__ import annotations

import signal

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP)


def default_signals() -> None:
    """In the child, before ``exec``: SIGINT, SIGTERM, SIGQUIT and SIGHUP at their default
    disposition (Python then turns SIGINT into KeyboardInterrupt), none blocked."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
