#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/report.py - everything shown from a bench run is read from its
results.json here, never typed in:

  report.py [--json FILE] summary     the side-by-side tables and the ratios
                                      that matter on the terminal; adds them
                                      to FILE as "summary"
  report.py [--json FILE] chart [SVG] the log-scale chart (gnuplot), default
                                      next to FILE as results.svg
  report.py [--json FILE] markdown [--chart PATH]
                                      the README's Performance section
  report.py [--json FILE] readme README.md [--chart PATH]
                                      replaces that section in README.md

The one exception is SEEDS below: the kernel documentation's 2005-2010
figures, quoted as such beside ours.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

VARIANTS = [
    ("push_rbp", "push %rbp"),
    ("endbr64", "endbr64"),
    ("riprel", "RIP-rel. load"),
    ("nop5", "5-byte nop"),
]

# (label, program, row name, legend)
UKPROBES = [
    ("k", "kprobes", "k", "kprobe, pre + post handler: int3, out-of-line copy, int3"),
    ("b", "kprobes", "b", "kprobe, pre handler only: boosted (int3, copy, jmp back)"),
    ("o", "kprobes", "o", "kprobe, OPTIMIZED: jmp to a detour that saves all registers incl. vector state (xsave)"),
    ("o-gpr", "kprobes", "o-gpr", "o with a handler declared KPROBE_FLAG_GPR_ONLY: no xsave"),
    ("r", "kprobes", "r", "kretprobe whose entry takes the single-step path (a post-handler kprobe beside it)"),
    ("rb", "kprobes", "rb", "kretprobe as registered: boosted entry, return through a trampoline (no trap)"),
    ("rb-gpr", "kprobes", "rb-gpr", "rb with a GPR-only return handler: the trampoline skips the xsave"),
    ("ro", "kprobes", "ro", "kretprobe with an OPTIMIZED entry"),
    ("ro-gpr", "kprobes", "ro-gpr", "ro with a GPR-only return handler"),
    ("kr", "kprobes", "kr", "kprobe (pre) + kretprobe on the same entry"),
    ("j", "kprobes", "j", "jprobe (entry function + jprobe_return(): two traps)"),
]
OTHERS = [
    ("uprobe", "tools", "uprobe", "Linux uprobe, p: event via tracefs (a trace record per hit)"),
    ("uretprobe", "tools", "uretprobe", "Linux uretprobe, r: event via tracefs"),
    ("bpftrace u", "tools", "bpf-u", "bpftrace uprobe, @c = count()"),
    ("bpftrace ur", "tools", "bpf-ur", "bpftrace uretprobe, @c = count()"),
    ("gdb", "tools", "gdb", "gdb breakpoint, commands silent; continue; end (wall time)"),
]
FLOORS = [
    ("int3", "kprobes", "int3", 1, "bare int3 -> SIGTRAP -> return (the floor of b)"),
    ("int3, 2 threads", "kprobes", "int3", 2, "the same in two threads of one process at once"),
    ("int3+TF", "kprobes", "int3+TF", 1, "int3 + one hardware single step (TF) trap"),
    ("regsave", "kprobes", "regsave", 1, "save 15 GPRs + flags, call an empty function, restore (the floor of o-gpr)"),
    ("xsave", "kprobes", "xsave", 1, "regsave + xsavec/xrstor of all XCR0 state (the floor of o)"),
]

# The kernel's Documentation/trace/kprobes.rst ("Probe Overhead" and
# "Optimized Probe Overhead"), in microseconds per hit: in-kernel probes,
# no signal delivery.  Quoted, not measured here.
SEEDS = [
    ("2005, AMD Opteron 246, 1994 MHz, x86_64",
     {"k": 0.49, "r": 0.80, "kr": 0.82}),
    ("2010, Intel Xeon E5410, 2.33 GHz, x86-64",
     {"k": 0.99, "b": 0.43, "o": 0.06, "r": 1.24, "rb": 0.68, "ro": 0.30}),
]
SEED_COLS = ["k", "b", "o", "r", "rb", "ro", "kr"]

SECTION = "## Performance"
BENCH_SECTION = "## Published results"


class Run:
    def __init__(self, path):
        with open(path) as f:
            self.d = json.load(f)
        self.path = path
        self.rows = {}
        for r in self.d.get("rows", []):
            key = (r.get("program", ""), r["name"], r["variant"], r["threads"])
            self.rows[key] = r

    def row(self, prog, name, variant, threads=1):
        return self.rows.get((prog, name, variant, threads))

    def val(self, prog, name, variant, threads=1, what="median_ns"):
        r = self.row(prog, name, variant, threads)
        return None if r is None else r.get(what)

    def ratio(self, name, variant, threads=1):
        q = self.d.get("ratios", {}).get(name)
        if not q:
            return None
        for b in q["by_variant"]:
            if b["variant"] == variant and b.get("threads", 1) == threads:
                return b
        return None


def na_reason(r):
    if r is None:
        return "not run"
    n = r.get("note", "")
    if n.startswith("n/a (") and n.endswith(")"):
        n = n[5:-1]
    n = n.split("; output in")[0]
    return n


def fmt(v, digits=None):
    if v is None:
        return "n/a"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def cell(run, prog, name, variant, threads=1, both=True):
    r = run.row(prog, name, variant, threads)
    if r is None or r.get("median_ns") is None:
        return "n/a"
    s = fmt(r["median_ns"])
    if both:
        s += f" ({fmt(r['min_ns'])})"
    return s


def ratio_cell(b):
    if b is None or b.get("median") is None:
        return "n/a"
    s = f"{b['median']:.3f}"
    if b.get("met") is True:
        s += " met"
    elif b.get("met") is False:
        s += " NOT met"
    return s


def rmed(run, name, variant, threads=1):
    b = run.ratio(name, variant, threads)
    return None if b is None else b.get("median")


def fx(v, spec=".2f", none="n/a"):
    return none if v is None else format(v, spec)


def cross(run, num, den, variant, threads=1):
    """Median/median and min/min of two rows of different programs."""
    a, b = run.row(*num, variant, threads), run.row(*den, variant, threads)
    if not a or not b or a.get("median_ns") is None or b.get("median_ns") is None:
        return None
    if not b["median_ns"] or not b["min_ns"]:
        return None
    return {"median": a["median_ns"] / b["median_ns"],
            "of_mins": a["min_ns"] / b["min_ns"]}


# ---------------------------------------------------------------------------
# Tables (lists of lists of strings), shared by the terminal and markdown
# ---------------------------------------------------------------------------

def hit_table(run):
    head = ["mechanism"] + [v[1] for v in VARIANTS] + ["push %rbp, 2 threads"]
    body = []
    for label, prog, name, _ in UKPROBES + OTHERS:
        line = [label]
        for v, _ in VARIANTS:
            line.append(cell(run, prog, name, v))
        line.append(cell(run, prog, name, "push_rbp", 2)
                    if run.row(prog, name, "push_rbp", 2) else "")
        body.append(line)
    return head, body


def floor_table(run):
    head = ["floor", "ns", "what"]
    body = []
    for label, prog, name, thr, what in FLOORS:
        body.append([label, cell(run, prog, name, "-", thr), what])
    return head, body


def ratios_table(run):
    head = ["ratio"] + [v[1] for v in VARIANTS] + ["2 threads"]
    body = []

    def per_run(name, label):
        line = [label]
        for v, _ in VARIANTS:
            line.append(ratio_cell(run.ratio(name, v)))
        line.append(ratio_cell(run.ratio(name, "push_rbp", 2)))
        body.append(line)

    def crossed(num, den, label):
        line = [label]
        for v, _ in VARIANTS:
            c = cross(run, num, den, v)
            line.append("n/a" if c is None else f"{c['median']:.3f}")
        c = cross(run, num, den, "push_rbp", 2)
        line.append("" if c is None else f"{c['median']:.3f}")
        body.append(line)

    crossed(("kprobes", "o"), ("tools", "uprobe"), "o / uprobe")
    crossed(("kprobes", "o-gpr"), ("tools", "uprobe"), "o-gpr / uprobe")
    crossed(("kprobes", "b"), ("tools", "uprobe"), "b / uprobe")
    per_run("b/int3", "b / int3 (goal <= 1.1)")
    per_run("k/(2*int3)", "k / 2 int3 (goal <= 1.1)")
    per_run("o/xsave", "o / xsave floor (goal <= 1.2)")
    per_run("o-gpr/regsave", "o-gpr / regsave floor (goal <= 1.5)")
    per_run("ro/xsave", "ro / xsave floor")
    per_run("ro-gpr/regsave", "ro-gpr / regsave floor (goal <= 3)")
    per_run("o/b", "o / b")
    per_run("rb/b", "rb / b (goal <= 1.1)")
    per_run("rb-gpr/b", "rb-gpr / b (goal <= 1.1)")
    per_run("r/k", "r / k (goal <= 1.1)")
    per_run("kr/rb", "kr / rb")
    per_run("j/b", "j / b")
    return head, body


def threads_table(run):
    head = ["2 threads / 1 thread (push %rbp)", "median", "of mins"]
    body = []
    for k in ["int3", "k", "b", "o", "o-gpr", "r", "rb", "rb-gpr", "ro", "ro-gpr", "kr", "j"]:
        b = run.ratio(f"{k} 2thr/1thr", "-" if k == "int3" else "push_rbp", 2)
        if b is None:
            continue
        body.append([k, ratio_cell(b), "n/a" if b.get("of_mins") is None
                     else f"{b['of_mins']:.3f}"])
    b = run.ratio("uprobe 2thr/1thr", "push_rbp", 2)
    if b:
        body.append(["uprobe", ratio_cell(b), "n/a" if b.get("of_mins") is None
                     else f"{b['of_mins']:.3f}"])
    return head, body


def scale_table(run):
    counts = ["1", "100", "10000", "100000", "libc10000", "spread10000"]
    head = ["per probe", "1", "100", "10,000", "100,000", "libc 10,000",
            "10,000 optimizable"]
    spec = [
        ("register_kprobe() one by one, µs CPU / wall", "reg", "us2"),
        ("unregister_kprobe() one by one, µs CPU / wall", "unreg", "us2"),
        ("register_kprobes(), µs CPU / wall", "regs", "us2"),
        ("unregister_kprobes(), µs CPU / wall", "unregs", "us2"),
        ("until optimized, ms (wall, all N)", "optall", "ms"),
        ("resident memory, bytes", "rss", "B"),
        ("malloc'ed, bytes", "heap", "B"),
    ]
    body = []
    for label, name, kind in spec:
        line = [label]
        for c in counts:
            r = run.row("scale", name, c)
            if r is None:
                line.append("")
                continue
            if r.get("median_ns") is None:
                line.append("n/a")
                continue
            if kind == "us2":
                line.append(f"{r['median_ns'] / 1000:.1f} / "
                            f"{r['wall_median_ns'] / 1000:.1f}")
            elif kind == "ms":
                note = r.get("note", "")
                k = ""
                for part in note.split("; "):
                    if "optimized" in part:
                        k = part.split(": ", 1)[-1].split(" optimized")[0]
                line.append(f"{r['median_ns']:,.0f}" + (f" ({k})" if k else ""))
            else:
                line.append(f"{r['median_ns']:,.0f}")
        body.append(line)
    runs = []
    for c in counts:
        r = run.row("scale", "reg", c) or run.row("scale", "regs", c)
        runs.append(str(r["runs"]) if r and r.get("runs") else "0")
    body.append(["runs"] + runs)
    return head, body


def crowd_table(run):
    head = ["one probe's hit, push %rbp", "alone", "10,000 others registered", "ratio"]
    body = []
    for k in ["b", "o"]:
        b = run.ratio(f"{k}+10k/{k}", "push_rbp")
        body.append([k, cell(run, "scale", k, "push_rbp"),
                     cell(run, "scale", f"{k}+10k", "push_rbp"),
                     ratio_cell(b)])
    return head, body


def seeds_table(run):
    head = ["µs per hit"] + SEED_COLS
    body = []
    for label, vals in SEEDS:
        body.append([label + " (kprobes.rst)"] +
                    [f"{vals[c]:.2f}" if c in vals else "" for c in SEED_COLS])
    m = run.d.get("machine", {})
    line = [f"{run.d.get('date', '')[:10]}, {m.get('cpu_model', '?')}, ukprobes "
            "(push %rbp, median)"]
    for c in SEED_COLS:
        v = run.val("kprobes", c, "push_rbp")
        line.append("n/a" if v is None else f"{v / 1000:.2f}")
    body.append(line)
    return head, body


def noisy_rows(run, limit=1.25, floor_ns=10):
    """Rows (of at least @floor_ns) whose slowest run took more than @limit
    times their fastest."""
    out = []
    for (prog, name, variant, thr), r in sorted(run.rows.items()):
        pr = [x for x in r.get("per_run_ns", []) if x is not None]
        if len(pr) < 3 or r.get("unit", "ns") != "ns" or min(pr) <= 0:
            continue
        if (r.get("median_ns") or 0) < floor_ns:
            continue
        spread = max(pr) / min(pr)
        if spread > limit:
            out.append((prog, name, variant, thr, spread))
    return out


def unmeasured(run):
    out = []
    for (prog, name, variant, thr), r in sorted(run.rows.items()):
        if r.get("median_ns") is None:
            out.append((prog, name, variant, thr, na_reason(r)))
    return out


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

def text_table(head, body, left=(0,)):
    w = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]

    def line(xs):
        return "  ".join(str(x).ljust(w[i]) if i in left else str(x).rjust(w[i])
                         for i, x in enumerate(xs)).rstrip()
    lines = [line(head), "  ".join("-" * w[i] for i in range(len(head)))]
    lines += [line(b) for b in body]
    return "\n".join(lines)


def md_table(head, body, left=(0,)):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" if i in left else "---:" for i in range(len(head))) + "|"]
    for b in body:
        out.append("| " + " | ".join(str(x).replace("|", "\\|") for x in b) + " |")
    return "\n".join(out)


def summary(run):
    m = run.d.get("machine", {})
    print()
    print("=== summary (bench/report.py; from " + run.path + ")")
    print(f"{m.get('cpu_model', '?')}, {m.get('nproc', '?')} CPUs"
          f"{' (VM)' if m.get('hypervisor') else ''}, Linux {m.get('kernel', '?')},"
          f" {run.d.get('date', '')}; load {run.d.get('load_average', {}).get('start', '?')}"
          f" -> {run.d.get('load_average', {}).get('end', '?')}")
    print()
    print("ns per hit over the unprobed call: median (min) of the runs; CPU time of the")
    print("probed thread, but gdb: wall time")
    print(text_table(*hit_table(run)))
    print()
    print(text_table(*floor_table(run), left=(0, 2)))
    print()
    print("ratios: per-run medians within a program; o|b / uprobe: median / median")
    print("(different programs)")
    print(text_table(*ratios_table(run)))
    print()
    print(text_table(*threads_table(run)))
    print()
    print(text_table(*crowd_table(run)))
    print()
    print(text_table(*scale_table(run)))
    print()
    print(text_table(*seeds_table(run)))
    miss = unmeasured(run)
    if miss:
        print()
        print("not measured:")
        for prog, name, variant, thr, why in miss:
            print(f"  {prog}: {name} {variant}{' x%d' % thr if thr > 1 else ''}: {why}")

    cr = {}
    for num, den, label in [(("kprobes", "o"), ("tools", "uprobe"), "o/uprobe"),
                            (("kprobes", "o-gpr"), ("tools", "uprobe"), "o-gpr/uprobe"),
                            (("kprobes", "b"), ("tools", "uprobe"), "b/uprobe"),
                            (("kprobes", "ro"), ("tools", "uretprobe"), "ro/uretprobe"),
                            (("kprobes", "rb"), ("tools", "uretprobe"), "rb/uretprobe")]:
        cr[label] = {v: cross(run, num, den, v) for v, _ in VARIANTS}
    run.d["summary"] = {
        "generated_by": "bench/report.py",
        "cross_program_ratios": cr,
        "cross_program_ratios_note": "median / median and min / min of rows "
                                     "of two programs (no per-run pairing)",
        "noisy_rows": [{"program": p, "name": n, "variant": v, "threads": t,
                        "max_over_min": round(s, 3)}
                       for p, n, v, t, s in noisy_rows(run)],
    }
    tmp = run.path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(run.d, f, indent=2)
        f.write("\n")
    os.replace(tmp, run.path)


def chart(run, svg):
    gp = shutil.which("gnuplot")
    if not gp:
        print("report.py: no chart: gnuplot is not installed", file=sys.stderr)
        return 1
    mechs = UKPROBES + OTHERS
    with tempfile.TemporaryDirectory() as td:
        dat = os.path.join(td, "hits.dat")
        with open(dat, "w") as f:
            for label, prog, name, _ in mechs:
                vals = []
                for v, _ in VARIANTS:
                    x = run.val(prog, name, v)
                    vals.append("-" if x is None or x <= 0 else f"{x:.3f}")
                f.write(f"\"{label}\" " + " ".join(vals) + "\n")
        m = run.d.get("machine", {})
        title = (f"ns per hit over the unprobed call (median of {run.d.get('config', {}).get('runs', '?')} runs; "
                 f"gdb: wall) - {m.get('cpu_model', '?')}, Linux {m.get('kernel', '?')}, "
                 f"{run.d.get('date', '')[:10]}")
        floors = []
        for label, prog, name, thr, _ in FLOORS:
            if thr != 1 or name == "int3+TF":
                continue
            x = run.val(prog, name, "-", thr)
            if x:
                floors.append((label, x))
        gps = os.path.join(td, "chart.gp")
        with open(gps, "w") as f:
            term = ('pngcairo size 1200,560 font "sans,11" background "white"'
                    if svg.endswith(".png") else
                    'svg size 1200,560 dynamic font "sans,12" background "white"')
            f.write(f"""set terminal {term}
set output "{svg}"
set title "{title}" font "sans,12"
set datafile missing "-"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 10
set yrange [1:1e6]
set format y "10^{{%L}}"
set ylabel "ns per hit (log scale)"
set grid ytics lc rgb "#dddddd"
set xtics rotate by -30 scale 0 font "sans,11"
set key top left Left reverse box opaque
set rmargin 12
set xrange [-0.6:{len(mechs) - 0.4}]
set label 99 "no bar: n/a in the table" at graph 0.01, graph -0.13 font "sans,10" tc rgb "#555555"
set linetype 1 lc rgb "#1f77b4"
set linetype 2 lc rgb "#ff7f0e"
set linetype 3 lc rgb "#2ca02c"
set linetype 4 lc rgb "#9467bd"
""")
            for i, (label, x) in enumerate(floors):
                f.write(f'set arrow {i + 1} from graph 0, first {x} to graph 1, first {x} '
                        f'nohead dt 2 lw 1 lc rgb "#888888" front\n')
                f.write(f'set label {i + 1} "{label} floor\\n{fmt(x)} ns" at graph 1, first {x} '
                        f'left offset 0.8,0 font "sans,10" tc rgb "#555555" front\n')
            cols = " , ".join(
                f"'{dat}' using {i + 2}{':xtic(1)' if i == 0 else ''} title \"{VARIANTS[i][1]}\""
                for i in range(len(VARIANTS)))
            f.write(f"plot {cols}\n")
        r = subprocess.run([gp, gps], capture_output=True, text=True)
        if r.returncode:
            print("report.py: gnuplot failed:\n" + r.stderr, file=sys.stderr)
            return 1
    print(f"wrote {svg}")
    return 0


def markdown(run, chart_path):
    m = run.d.get("machine", {})
    cfg = run.d.get("config", {})
    la = run.d.get("load_average", {})
    progs = {p["name"]: p for p in run.d.get("programs", [])}
    L = []
    a = L.append
    a(SECTION)
    a("")
    a("<!-- Generated by `make bench-readme` (bench/report.py) from "
      "bench/published/results.json; do not edit by hand. -->")
    a("")
    a(f"One run of `make bench` on {m.get('cpu_model', '?')} ({m.get('nproc', '?')} vCPUs"
      f"{', a VM' if m.get('hypervisor') else ''}), Linux {m.get('kernel', '?')}, "
      f"{run.d.get('date', '?')}; {cfg.get('runs', '?')} runs per row, load average "
      f"{la.get('start', '?')} at the start and {la.get('end', '?')} at the end (the machine "
      "was shared with other jobs). Every figure below comes from "
      "[bench/published/results.json](bench/published/results.json), which also has "
      "each run's figure, the wall-clock times and the ratios.")
    a("")
    if chart_path:
        a(f"![ns per hit, log scale]({chart_path})")
        a("")
    o = run.val("kprobes", "o", "push_rbp")
    og = run.val("kprobes", "o-gpr", "push_rbp")
    up = run.val("tools", "uprobe", "push_rbp")
    upr = run.val("tools", "uprobe", "riprel")
    b = run.val("kprobes", "b", "push_rbp")
    a("In short, from this run (medians, first instruction `push %rbp` unless said):")
    a("")
    a(f"- an **optimized probe (o)** costs {fmt(o)} ns per hit: "
      f"{fx(up / o if o and up else None, '.1f')} times less than a Linux uprobe on the same "
      f"instruction ({fmt(up)} ns) and {fx(upr / o if o and upr else None, '.0f')} times less "
      f"than one that must single-step (RIP-relative load: {fmt(upr)} ns); with handlers "
      f"declared general-registers-only (o-gpr), {fmt(og)} ns;")
    a(f"- o is {fx(rmed(run, 'o/xsave', 'push_rbp'))} times its floor, a stub that saves "
      f"every register including the vector state and calls an empty function "
      f"({fmt(run.val('kprobes', 'xsave', '-'))} ns); o-gpr is "
      f"{fx(rmed(run, 'o-gpr/regsave', 'push_rbp'))} times the same without the vector "
      f"state ({fmt(run.val('kprobes', 'regsave', '-'))} ns);")
    a(f"- an **optimized return probe (ro)**, entry and return, costs "
      f"{fmt(run.val('kprobes', 'ro', 'push_rbp'))} ns; with general-registers-only "
      f"handlers (ro-gpr) {fmt(run.val('kprobes', 'ro-gpr', 'push_rbp'))} ns, "
      f"{fx(rmed(run, 'ro-gpr/regsave', 'push_rbp'))} times the register-save floor, and "
      f"{fx(rmed(run, 'ro-gpr 2thr/1thr', 'push_rbp', 2))} times that per thread with two "
      "threads on it;")
    a(f"- a **boosted breakpoint probe (b)** costs {fmt(b)} ns, "
      f"{fx(rmed(run, 'b/int3', 'push_rbp'), '.3f')} times (median of the per-run ratios) "
      f"the bare int3 -> SIGTRAP -> return round trip ({fmt(run.val('kprobes', 'int3', '-'))} "
      "ns), which no breakpoint in user space avoids.")
    a("")
    a("Nanoseconds per hit, over the same function's unprobed call: median of the runs "
      "(min in parentheses). Time is CPU time (user + kernel) of the thread that hits the "
      "probe, which is where the trap, the signal or the uprobe handler and the BPF program "
      "run; gdb's is the wall time of the loop, since each hit waits for gdb, another "
      "process. The workload is a tiny function called through a pointer in a loop; its "
      "first instruction is the column.")
    a("")
    a(md_table(*hit_table(run)))
    a("")
    for label, _, _, what in UKPROBES + OTHERS:
        pass
    a("Rows: " + "; ".join(f"**{label}** {what}" for label, _, _, what in UKPROBES + OTHERS) + ".")
    a("")
    a(md_table(*floor_table(run), left=(0, 2)))
    a("")
    a("### Ratios")
    a("")
    a("Within one program the ratio is taken run by run and its median is shown (numerator "
      "and denominator measured moments apart); ukprobes against uprobe compares two "
      "programs, so it is median over median.")
    a("")
    a(md_table(*ratios_table(run)))
    a("")
    a(md_table(*threads_table(run)))
    a("")
    a("### Many probes")
    a("")
    pool = ""
    r = run.row("scale", "regs", "100000")
    if r:
        for part in r.get("note", "").split("; "):
            if "from libz" in part:
                pool = " (100,000 = " + part.split("pool: ", 1)[-1] + ")"
    a("Probes on every instruction boundary of libz's exported functions (enough for 1 to "
      "10,000) and, past those, of libzstd's whole `.text` (dlopen'ed, never called)" + pool +
      "; libc: the first 10,000 of its exported functions' instructions in address order, "
      "while the process runs libc, so that registering may hit probes already there (the JSON notes how many ukprobes refused). "
      "Registration is timed in the registering thread, CPU and wall (wall includes waiting "
      "for the background optimizer, on as by default); \"until optimized\" is the wall time "
      "from the end of `register_kprobes()` until `ukprobes_wait_optimizer()` returns, with "
      "how many of the N it optimized (a probe cannot be optimized when the next "
      "instruction, inside its 5-byte jump, is probed too); memory is the process's growth "
      "per probe once they are registered and optimized. \"10,000 optimizable\" are "
      "10,000 of those instructions, 16 bytes apart or more, that a throw-away child saw "
      "optimized together: the issue's \"time to optimize 10,000 probes in one batch\" "
      "(goal: under 100 ms) is its \"until optimized\" cell, which includes the "
      "optimizer's 5 ms wait for a batch to gather. At 1 and 100 probes the figures "
      "per probe are mostly what the first probe costs once, spread over few probes.")
    a("")
    a(md_table(*scale_table(run)))
    a("")
    a(md_table(*crowd_table(run)))
    a("")
    a("### Beside the seeds' figures")
    a("")
    a("The kernel's Kprobes documentation (kprobes.rst) quotes these per-hit costs for "
      "in-kernel probes; the last line is this run, in the same unit. The kernel handles a "
      "breakpoint without a signal; a user-space breakpoint cannot avoid the kernel's "
      "signal delivery and return: b is "
      f"{fx(rmed(run, 'b/int3', 'push_rbp'))} times the int3 floor above, k "
      f"{fx(rmed(run, 'k/(2*int3)', 'push_rbp'))} times two of them. The optimized rows o "
      "and ro, which take no trap, are where ukprobes meets the seeds' figures.")
    a("")
    a(md_table(*seeds_table(run)))
    a("")
    a("### What the numbers depend on")
    a("")
    tf = rmed(run, "(int3+TF)/int3", "-")
    a("- **The first instruction.** Breakpoint probes (k, b, r, rb, kr, j) run the "
      "instruction from a copy out of line, so they cost about the same whatever it is. "
      "Linux uprobes emulate `push %rbp` in the kernel but single-step the endbr64 and the "
      "RIP-relative load with TF, a debug trap more (int3+TF is "
      f"{fx(tf, '.1f')} times an int3 here); on the 5-byte nop this kernel replaces the "
      "breakpoint with a call into its uprobe trampoline after the first hit (the nop5 "
      "column; the rows' notes in the JSON say when the workload saw that call). ukprobes "
      "optimizes a probe on the `endbr64` itself (indirect calls land on its jump) unless "
      "the kernel enforces IBT on the process.")
    a("- **Optimization.** o and ro jump to a detour instead of trapping; whether the "
      "detour saves the vector state (o) or not (o-gpr, handlers declared "
      "`KPROBE_FLAG_GPR_ONLY`) is most of what is left. The regsave floor restores the "
      "flags with `popfq`, about 6.5 ns of its cost here; the detour restores them "
      "without it (an overflowing add for OF, `sahf` for the rest; `popfq` only when DF, "
      "AC, TF or ID is set), which is why o-gpr can come out at or under the floor. ro "
      "primes the return: its detour pushes the return it installs onto the return "
      "stack buffer, so neither `ret` is mispredicted. The other rows are measured with "
      "optimization off (`ukprobes_set_optimization(0)`), as the breakpoint path they name.")
    a("- **Threads.** With two threads hitting the same probe at once, every breakpoint "
      "row costs each thread about "
      f"{fx(rmed(run, 'b 2thr/1thr', 'push_rbp', 2), '.1f')} times (b) what it costs one "
      "thread alone, and so does the bare int3 floor "
      f"({fx(rmed(run, 'int3 2thr/1thr', '-', 2), '.1f')} times): the kernel delivers "
      "each trap as a signal to the same process. ro costs "
      f"{fx(rmed(run, 'ro 2thr/1thr', 'push_rbp', 2), '.2f')} times (each thread keeps "
      "the return instances it gave back: no shared free list on the hit path); o "
      f"{fx(rmed(run, 'o 2thr/1thr', 'push_rbp', 2), '.2f')} times and Linux uprobes "
      f"{fx(rmed(run, 'uprobe 2thr/1thr', 'push_rbp', 2), '.2f')} times. On this shared "
      "machine the two threads do not always get both CPUs: an attempt in which they "
      "mostly took turns is repeated (up to 4 times) and the one where they ran most side "
      "by side is kept; a run's JSON note says when that stayed below 1.75 CPUs.")
    a("- **The machine.** A VM (" + ("the CPU reports a hypervisor" if m.get("hypervisor")
      else "no hypervisor reported") + f") with {m.get('nproc', '?')} vCPUs that other "
      "jobs used during the run: times are CPU time of the probed thread, which waiting "
      "for a CPU does not inflate, but caches and the other jobs' traps still do. "
      "Trap costs on other machines and kernels differ; compare rows of the same run.")
    noisy = noisy_rows(run)
    if noisy:
        a("- **Noise in this run.** Rows of 10 ns or more whose slowest run took more than "
          "1.25 times their fastest (that factor in parentheses): " + ", ".join(
              f"{p}: {n} {v}{' x%d' % t if t > 1 else ''} ({s:.2f})"
              for p, n, v, t, s in noisy) + ". The min is the better estimate there. "
          f"(The unprobed calls, {fmt(run.val('kprobes', 'baseline', 'push_rbp'))} ns for "
          "push %rbp, vary by tenths of a ns.)")
    else:
        a("- **Noise in this run.** No row of 10 ns or more had a run slower than 1.25 "
          "times its fastest.")
    miss = unmeasured(run)
    if miss:
        a("")
        a("Not measured in this run: " + "; ".join(
            f"{n} {v}{' x%d' % t if t > 1 else ''} ({why})"
            for p, n, v, t, why in miss) + ".")
    a("")
    a("### Reproducing")
    a("")
    a("```sh")
    total = sum(p.get("seconds", 0) for p in progs.values())
    a(f"make bench            # {total // 60} min {total % 60} s in this run; tables, bench/results.json, bench/results.svg")
    a("make bench-readme     # publish that run: bench/published/ and this section")
    a("```")
    a("")
    a("`make bench` installs what it needs (bpftrace, gdb, gnuplot from Debian) and "
      "writes a row as n/a with the reason when the machine cannot do it (no root: no "
      "tracefs, no bpftrace; no tracefs; ptrace refused). How each row is measured: "
      "[bench/README.md](bench/README.md). Time per program in this run: " +
      ", ".join(f"{n} {p.get('seconds', '?')} s" for n, p in progs.items()) + ".")
    a("")
    return "\n".join(L)


def short_summary(run, full):
    """README's Performance section: the "In short" lines of the full
    section, the tracer's figures, and where the rest is."""
    m = run.d.get("machine", {})
    lines = full.split("\n")
    L = [SECTION, "",
         "<!-- Generated by `make bench-readme` (bench/report.py); do not edit by hand. -->",
         "",
         f"From one run of `make bench` on {m.get('cpu_model', '?')} "
         f"({m.get('nproc', '?')} vCPUs), {run.d.get('date', '?')}:", ""]
    take = False
    for l in lines:
        if l.startswith("In short"):
            take = True
            continue
        if take and (l.startswith("|") or l.startswith("Nanoseconds")):
            break
        if take and l.startswith("- "):
            L.append(l)
    base = os.path.dirname(os.path.abspath(__file__))
    for name, fmt_line in (("tracer.json", tracer_line), ("tracer_malloc.json", malloc_line)):
        fp = os.path.join(base, "published", name)
        if os.path.exists(fp):
            try:
                with open(fp) as f:
                    t = fmt_line(json.load(f))
                if t:
                    L.append(t)
            except (OSError, ValueError, KeyError):
                pass
    L += ["", "The tables (every mechanism, first instruction, thread count, the "
          "floors, many probes, the ratios and their goals) and how each figure is "
          "measured: [bench/README.md](bench/README.md).", ""]
    return "\n".join(L)


def tracer_line(t):
    rows = {r["name"]: r for r in t.get("rows", [])}
    u, b = rows.get("ukprobe", {}), rows.get("bpftrace", {})
    return (f"- the **tracer** writes {u.get('events_per_s', '?')} events/s to a file "
            f"({u.get('lost', '?')} lost) where bpftrace writes {b.get('events_per_s', '?')}: "
            f"{t.get('ratio_ukprobe_over_bpftrace', '?')} times its rate "
            f"(on {t.get('cpu', '?')}, {t.get('ncpus', '?')} CPUs; "
            f"[bench/published/tracer.json](bench/published/tracer.json));")


def malloc_line(t):
    rows = {r["name"]: r for r in t.get("rows", [])}
    u, f = rows.get("ukprobe", {}), rows.get("uftrace", {})
    return (f"- every one of {t.get('calls', '?')} malloc calls recorded in "
            f"{u.get('seconds', '?')} s, where `uftrace record` takes {f.get('seconds', '?')} s "
            f"({t.get('ratio_ukprobe_over_uftrace', '?')} times, load {t.get('load_at_end', '?')}; "
            "[bench/published/tracer_malloc.json](bench/published/tracer_malloc.json)).")


def update_readme(path, text, section=None):
    section = section or SECTION
    with open(path) as f:
        lines = f.read().split("\n")
    start = end = None
    for i, l in enumerate(lines):
        if l.strip() == section:
            start = i
        elif start is not None and i > start and l.startswith("## "):
            end = i
            break
    new = text.rstrip("\n").split("\n") + [""]
    if start is None:
        # Before "## Limitations", else "## Status", else at the end.
        at = None
        for h in ("## Limitations", "## Status", "## License"):
            for i, l in enumerate(lines):
                if l.strip() == h:
                    at = i
                    break
            if at is not None:
                break
        if at is None:
            lines = lines + [""] + new
        else:
            lines = lines[:at] + new + lines[at:]
    else:
        if end is None:
            end = len(lines)
        lines = lines[:start] + new + lines[end:]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print(f"updated the {section} section of {path}")


def main(argv):
    path = "bench/results.json"
    args = argv[1:]
    if len(args) >= 2 and args[0] == "--json":
        path = args[1]
        args = args[2:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    if not os.path.exists(path):
        print(f"report.py: no {path}: run make bench first", file=sys.stderr)
        return 1
    run = Run(path)
    chart_path = "bench/published/results.svg"
    if "--chart" in args:
        i = args.index("--chart")
        chart_path = args[i + 1]
        del args[i:i + 2]
    cmd = args[0]
    if cmd == "summary":
        summary(run)
        return 0
    if cmd == "chart":
        svg = args[1] if len(args) > 1 else os.path.join(os.path.dirname(path) or ".",
                                                        "results.svg")
        return chart(run, svg)
    if cmd == "markdown":
        print(markdown(run, chart_path))
        return 0
    if cmd == "readme" and len(args) > 1:
        # The tables go to bench/README.md (links relative to bench/);
        # README.md keeps a summary of a few lines.
        bench_readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "README.md")
        rel = chart_path[len("bench/"):] if chart_path.startswith("bench/") else chart_path
        full = markdown(run, rel).replace("](bench/", "](")
        full = full.replace(SECTION, BENCH_SECTION, 1)
        update_readme(bench_readme, full, BENCH_SECTION)
        update_readme(args[1], short_summary(run, full))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
