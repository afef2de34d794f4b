// SPDX-License-Identifier: MIT
/*
 * test_attach.c - end-to-end tests of `ukprobe trace -p PID` (attach to a
 * running process, detach leaving it as it was), the refusals that leave
 * the process untouched, and `ukprobe list|enable|disable|optimization
 * -p PID`.  The process is tests/tool/progs/waiter, started by each test:
 * it blocks in read(), nanosleep() and poll(), and exits 3 if any of them
 * ever fails with EINTR.
 */
#include "tool_test.h"


/* Each script starts with the waiter running: $W its pid, fd 3 its input,
 * waitfor CMD (up to 15 s), finish (end its input, $? of it). */
static const char waiter_prelude[] =
	"cd $T; mkfifo in\n"
	"$P/waiter < in > wout 2>&1 &\nW=$!\nexec 3>in\n"
	"# until the waiter waits in read()\n"
	"echo zero >&3\n"
	"for i in $(seq 100); do grep -q 'line 0' wout && break; sleep 0.05; done\n"
	"waitfor() { for i in $(seq 300); do eval \"$1\" && return 0; sleep 0.05; done; "
	"return 1; }\n"
	"finish() { exec 3>&-; wait $W; echo wstatus=$?; }\n";

static void attach_setup(void)
{
	setup();
	sh_prelude = waiter_prelude;
}

TestSuite(attach, .init = attach_setup, .fini = teardown, .timeout = 90);

Test(attach, trace_then_detach_leaves_the_process_as_it_was)
{
	struct res r = sh(
		"grep SigCgt /proc/$W/status > sig.before\n"
		"$U trace -v -p $W -o t -e 'p:waiter:target n=%%di:s64' 2>err &\nUP=$!\n"
		"waitfor 'grep -q attached err' || echo never-attached\n"
		"echo one >&3; echo two >&3\n"
		"waitfor '[ \"$(grep -c target+0x0 t)\" = 2 ]' || echo events-missing\n"
		"kill -INT $UP; wait $UP; echo ustatus=$?\n"
		"echo three >&3\n"
		"waitfor 'grep -q \"line 3\" wout'\n"
		"grep SigCgt /proc/$W/status > sig.after\n"
		"cmp -s sig.before sig.after && echo handlers-same\n"
		"finish\ncat wout; echo ---; cat t; echo ---; cat err");

	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "ustatus=0\n"), "%s", r.out);
	cr_assert(strstr(r.out, "handlers-same\n"), "%s", r.out);
	/* No EINTR in read(), nanosleep() or poll(); every line read. */
	cr_assert(strstr(r.out, "wstatus=0\n"), "%s", r.out);
	cr_assert(strstr(r.out, "done lines=4 ticks>0=1\n"), "%s", r.out);
	/* The two lines read while attached, and only those. */
	cr_assert_eq(count(r.out, "p_target_0: (target+0x0/"), 2, "%s", r.out);
	cr_assert(strstr(r.out, " n=1\n") && strstr(r.out, " n=2\n"), "%s", r.out);
	cr_assert(strstr(r.out, "detached from"), "%s", r.out);
}

Test(attach, attach_again_and_return_probes)
{
	/* Three sessions one after the other (the agent stays loaded), the
	 * second with a return probe and --duration, the third latency -p. */
	struct res r = sh(
		"$U trace -v -p $W -o t1 -e 'p:waiter:target n=%%di:s64' 2>err1 &\nUP=$!\n"
		"waitfor 'grep -q attached err1'\n"
		"echo one >&3\n"
		"waitfor 'grep -q target+0x0 t1'\n"
		"kill -TERM $UP; wait $UP; echo u1=$?\n"
		"$U trace -v -p $W --duration 4 -o t2 -e 'r:waiter:target ret=$retval:s64' 2>err2 &\n"
		"UP=$!\nwaitfor 'grep -q attached err2'\n"
		"echo two >&3\n"
		"wait $UP; echo u2=$?\n"
		"$U latency -v -p $W --duration 4 -o t3 waiter:target 2>err3 &\n"
		"UP=$!\nwaitfor 'grep -q attached err3'\n"
		"echo three >&3; echo four >&3\n"
		"wait $UP; echo u3=$?\n"
		"echo five >&3\nfinish\ncat t1 t2 t3 wout err1 err2 err3");

	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "u1=0\n") && strstr(r.out, "u2=0\n"), "%s", r.out);
	cr_assert(strstr(r.out, "wstatus=0\n"), "%s", r.out);
	cr_assert_eq(count(r.out, "p_target_0: (target+0x0/"), 1, "%s", r.out);
	cr_assert_eq(count(r.out, "r_target_0: (main+"), 1, "%s", r.out);
	cr_assert(strstr(r.out, "ret=4\n"), "%s", r.out);
	/* latency -p: the two calls made while attached. */
	cr_assert(strstr(r.out, "u3=0\n"), "%s", r.out);
	cr_assert(strstr(r.out, "waiter:target\n     nsecs "), "%s", r.out);
	cr_assert(strstr(r.out, ", count: 2\n"), "%s", r.out);
	cr_assert(strstr(r.out, "done lines=6 "), "%s", r.out);
}

Test(attach, refusals_leave_the_process_untouched)
{
	/* Another tracer is there; another user's process; no such process;
	 * a seccomp filter; SIGTRAP blocked: one line each, exit 1, and
	 * nothing loaded in the process.  (Yama's ptrace_scope is not
	 * tested: not every kernel has Yama, and it is the machine's.) */
	struct res r = sh(
		"strace -o /dev/null -p $W 2>/dev/null &\nS=$!\n"
		"waitfor 'grep -q \"TracerPid:[[:space:]]*$S\" /proc/$W/status'\n"
		"$U trace -p $W -e 'p:waiter:target' 2>e1; echo traced=$?\n"
		"kill $S; wait $S\n"
		"waitfor 'grep -q \"TracerPid:[[:space:]]*0$\" /proc/$W/status'\n"
		"setpriv --reuid=65534 --regid=65534 --clear-groups "
		"$U trace -p $W -e 'p:waiter:target' 2>e2; echo user=$?\n"
		"$U trace -p 999999999 -e 'p:waiter:target' 2>e3; echo none=$?\n"
		"grep -c libukprobe /proc/$W/maps; echo four >&3\n"
		"for how in seccomp blocktrap; do\n"
		"  $P/restricted $how sleep 100 & R=$!\n"
		"  waitfor 'grep -q sleep /proc/$R/comm'\n"
		"  $U trace -p $R -e 'p:libc.so.6:nanosleep' 2>>e4; echo $how=$?\n"
		"  echo $how-maps=$(grep -c libukprobe /proc/$R/maps)\n"
		"  kill $R; wait $R 2>/dev/null\n"
		"done\n"
		"finish\ncat e1 e2 e3 e4");

	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "traced=1\n") && strstr(r.out, "user=1\n") &&
		  strstr(r.out, "none=1\n"), "%s", r.out);
	cr_assert(strstr(r.out, "is already traced by ") && strstr(r.out, "(strace)"), "%s", r.out);
	cr_assert(strstr(r.out, "belongs to uid 0, and you are uid 65534"), "%s", r.out);
	cr_assert(strstr(r.out, "no process 999999999"), "%s", r.out);
	/* A seccomp filter, a thread that blocks SIGTRAP. */
	cr_assert(strstr(r.out, "seccomp=1\n") && strstr(r.out, "blocktrap=1\n"), "%s", r.out);
	cr_assert(strstr(r.out, "seccomp-maps=0\n") && strstr(r.out, "blocktrap-maps=0\n"), "%s",
		  r.out);
	cr_assert(strstr(r.out, "(sleep) runs under a seccomp filter: "), "%s", r.out);
	cr_assert(strstr(r.out, "(sleep) blocks SIGTRAP: "), "%s", r.out);
	cr_assert(strstr(r.out, "\n0\n"), "libukprobe loaded: %s", r.out);
	cr_assert(strstr(r.out, "wstatus=0\n"), "%s", r.out);
	/* One line each. */
	cr_assert_eq(count(r.out, "ukprobe: "), 5, "%s", r.out);
}

Test(attach, list_enable_disable_optimization_of_a_running_process)
{
	/* The waiter started by ukprobe trace; its probes listed and switched
	 * from another ukprobe. */
	struct res r = sh(
		"exec 3>&-; wait $W\n"
		"mkfifo in2; $U trace -o t -e 'p:waiter:target n=%%di:s64' -- $P/waiter < in2 "
		"> wout2 2>&1 &\nUP=$!\nexec 4>in2\n"
		"waitfor 'pgrep -P $UP >/dev/null'\nW2=$(pgrep -P $UP)\n"
		"echo a >&4\nwaitfor 'grep -q \" n=0\" t'\n"
		"$U list -p $W2; echo list=$?\n"
		"$U disable -p $W2; echo disable=$?\n"
		"echo b >&4\nwaitfor 'grep -q \"line 1\" wout2'\n"
		"$U optimization -p $W2; $U optimization -p $W2 off\n"
		"$U enable -p $W2; echo enable=$?\n"
		"echo c >&4\nwaitfor 'grep -q \" n=2\" t'\n"
		"$U list; echo nopid=$?\n"
		"exec 4>&-; wait $UP; echo u=$?\ncat t");

	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, " k  waiter:target+0x0") || strstr(r.out, " k waiter:target+0x0") ||
		  strstr(r.out, "target+0x0"), "%s", r.out);
	cr_assert(strstr(r.out, "list=0\n") && strstr(r.out, "disable=0\n") &&
		  strstr(r.out, "enable=0\n") && strstr(r.out, "u=0\n"), "%s", r.out);
	cr_assert(strstr(r.out, "enabled=0\noptimization=1\n"), "%s", r.out);
	cr_assert(strstr(r.out, "nopid=2\n"), "%s", r.out);
	/* Disabled: no event for the second line. */
	cr_assert(strstr(r.out, " n=0\n") && !strstr(r.out, " n=1\n") && strstr(r.out, " n=2\n"),
		  "%s", r.out);
}
