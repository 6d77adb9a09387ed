"""SIGTERM and SIGHUP handled like Ctrl-C by the command-line tools (the planner, the GGUF
importer), so that the cleanup their writers run for KeyboardInterrupt (removing a temporary
file or directory) runs for them too, and the tool then ends by that signal, as a shell or a
supervisor expects.

Before its slow imports a tool's entry module calls quiet_until_main(__name__), so that Ctrl-C
then ends it at once without a traceback; install() puts Python's KeyboardInterrupt handler back
before the tool writes anything.

Usage in a tool's main():
    signals.install()
    try:
        ...
    except KeyboardInterrupt as e:
        print(f"tool: interrupted ({signals.name_of(e)}): ...", file=sys.stderr)
        signals.end_by(e)
"""
import os
import signal
import sys


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C raises KeyboardInterrupt."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum, frame):
    del frame
    raise Interrupted(signum)


def quiet_until_main(module_name: str) -> None:
    """Called by a tool's entry module before its slow imports, with its __name__: when it runs
    as a command (__main__) and Python's KeyboardInterrupt handler is in place, SIGINT gets its
    default action, so that Ctrl-C during the imports (~0.3 s; nothing is written yet) ends the
    process by SIGINT at once, without a traceback. install() puts the handler back."""
    if module_name == "__main__" and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def install() -> None:
    """Makes SIGTERM and SIGHUP raise Interrupted, each only where its handler is the default
    (a signal ignored on purpose, as nohup ignores SIGHUP, stays ignored), and SIGINT raise
    KeyboardInterrupt again where the entry module's quiet start left its default action
    (Python itself installs that handler at startup unless SIGINT is ignored)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_DFL:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _raise_interrupted)


def signum_of(e: KeyboardInterrupt) -> int:
    """The signal behind `e`: Interrupted's, else SIGINT (Ctrl-C)."""
    return e.signum if isinstance(e, Interrupted) else signal.SIGINT


def name_of(e: KeyboardInterrupt) -> str:
    """'SIGINT', 'SIGTERM' or 'SIGHUP' for `e`."""
    return signal.Signals(signum_of(e)).name


def end_by(e: KeyboardInterrupt) -> int:
    """Ends the process by the signal behind `e`, with its default action. Returns 128 +
    the signal number only if that did not end the process (for main's return value)."""
    signum = signum_of(e)
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum
