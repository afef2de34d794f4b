# SPDX-License-Identifier: MIT
"""ukprobes.py - gdb commands that pass ukprobes' breakpoints on to the
program.

Every probe hit of ukprobes is an int3, whose SIGTRAP the program's
handler (ukprobes') must receive.  gdb stops at it as at any SIGTRAP it did
not cause, and does not pass it on by default: the program cannot go on.
"handle SIGTRAP nostop pass" passes gdb's own traps too (its breakpoints,
and the dynamic linker's, where it watches libraries being loaded), which
kills any program before main, and any program that loads a library later.

These commands pass on only the SIGTRAPs that come from an int3 gdb did
not put there (the byte before the pc, as gdb shows memory without its own
breakpoints, is 0xcc), and stop as usual at anything else:

    (gdb) source /path/to/ukprobes.py
    (gdb) ukprobes-run [ARGS]      run, as "run"
    (gdb) ukprobes-continue        continue, as "continue"

See ukprobes(7), "Signals".
"""
import gdb


def _stopped_at_int3():
    """The thread stopped on SIGTRAP just after an int3 of the program's
    code (not a breakpoint of gdb's)."""
    try:
        if not gdb.selected_inferior().pid or gdb.selected_thread() is None:
            return False
        if int(gdb.parse_and_eval("$_siginfo.si_signo")) != 5:  # SIGTRAP
            return False
        pc = int(gdb.selected_frame().pc())
        return bytes(gdb.selected_inferior().read_memory(pc - 1, 1)) == b"\xcc"
    except (gdb.error, gdb.MemoryError, ValueError):
        return False


def _pass_traps():
    while _stopped_at_int3():
        try:
            gdb.execute("signal SIGTRAP")
        except gdb.error:
            break       # it exited meanwhile


class _UkprobesRun(gdb.Command):
    """Run the program, passing ukprobes' SIGTRAPs on to it, until it stops
    for another reason or exits."""

    def __init__(self):
        super().__init__("ukprobes-run", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        gdb.execute("run " + arg)
        _pass_traps()


class _UkprobesContinue(gdb.Command):
    """Continue, passing ukprobes' SIGTRAPs on to the program, until it
    stops for another reason or exits."""

    def __init__(self):
        super().__init__("ukprobes-continue", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        if _stopped_at_int3():
            gdb.execute("signal SIGTRAP")
        else:
            gdb.execute("continue " + arg)
        _pass_traps()


_UkprobesRun()
_UkprobesContinue()
