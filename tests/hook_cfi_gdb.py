"""gdb -batch -x hook_cfi_gdb.py --args PROG (test_hook_cfi.py): steps through
every instruction of the -pg hooks (__fentry__, __return__, and ft_asm_slow
when they call it) in the scenarios that reach each of their paths, and at
each one checks the frames gdb unwinds: the hook, then its caller at the
instruction after the call, then the caller's callers -- also from inside a
SIGUSR1 handler run at that instruction (the signal frame's caller is the
hook at that very instruction).

With HOOK_CFI_FAULT=OFFSET (an offset into __return__): runs leaf's return
(a stamp due in sampled mode) up to that instruction and delivers SIGSEGV
there -- the kernel dumps a core (the program runs in a directory of its own
with a core limit).

Environment: HOOK_CFI_MODE (exact / sampled: the FUNTRACE_TIME the program
runs with), HOOK_CFI_SIGNALS (1: the signal check too), HOOK_CFI_OUT (the
JSON written: checks made, errors, every hook's instructions and the ones
visited, as offsets)."""
import json
import os
import re

import gdb

MODE = os.environ["HOOK_CFI_MODE"]
SIGNALS = os.environ.get("HOOK_CFI_SIGNALS") == "1"
HOOKS = ["__fentry__", "__return__"]
# struct ft_thread (runtime/ft_hook_offsets.h)
R_POS, R_MASK, R_CD, R_WRAP, R_AHI, R_THI, R_SELF = 0, 8, 16, 24, 32, 36, 40
FT_MODE_OFF = 0x80

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("handle SIGUSR1 nostop noprint pass")
gdb.execute(f"set environment FUNTRACE_TIME {MODE}")
gdb.execute("set environment FUNTRACE_GEN_MS 0")  # no generation switch resets the high halves mid-scenario


def disas(fn):
    out = gdb.execute(f"disassemble {fn}", to_string=True)
    res = []
    for line in out.splitlines():
        m = re.match(r"\s*(?:=>)?\s*(0x[0-9a-f]+) <\+\d+>:\s*(.*)", line)
        if m:
            res.append((int(m.group(1), 16), m.group(2)))
    return res


def ev(expr):
    return int(gdb.parse_and_eval(expr))


def pc():
    return ev("$pc")


def u64(a):
    return ev(f"*(unsigned long *){a}")


def u32(a):
    return ev(f"*(unsigned int *){a}")


def setmem(a, v, t="unsigned long"):
    gdb.execute(f"set var *({t} *){a} = {v}")


def insn_at(p):
    return gdb.selected_frame().architecture().disassemble(p)[0]


errors, checked, paths = [], 0, {}

gdb.execute("break mid")
gdb.execute("run 40 >/dev/null")
gdb.execute("delete")
INS = {h: disas(h) for h in HOOKS + ["ft_asm_slow"]}
RANGE = {h: (ins[0][0], ins[-1][0] + insn_at(ins[-1][0])["length"]) for h, ins in INS.items()}
visited = {h: set() for h in INS}


def func_at(p):
    for h, (a, b) in RANGE.items():
        if a <= p < b:
            return h
    return None


# the record's TLS slot (exact mode: ft_self, sampled: ft_self_s), from the thread pointer;
# the hooks load it %fs-relative
TPOFF = ev(f"(long)&{'ft_self' if MODE == 'exact' else 'ft_self_s'}") - ev("(long)$fs_base")
TP = [int(m, 16) - (1 << 64) for _, t in INS["__fentry__"] for m in re.findall(r"%fs:(0x[0-9a-f]+)", t)]
assert TPOFF in TP, (TPOFF, TP)


def rec_slot():
    return ev("$fs_base") + TPOFF


def rec():
    return u64(rec_slot())


def sym(name):
    return ev(f"(unsigned long)&{name}")


def frames():
    f, out = gdb.newest_frame(), []
    while f is not None and len(out) < 16:
        out.append((f.name(), f.pc(), f.type()))
        f = f.older()
    return out


def check(inner, ret, expect, where, sig=False):
    """inner: the frames expected above the hook's caller (innermost first),
    expect: the caller and its callers, ret: the pc of the frame below the
    innermost (the instruction after its call of the innermost)"""
    global checked
    checked += 1
    fr = frames()
    names = [n for n, _, _ in fr]
    i = 0
    if sig:
        if not (len(fr) > 2 and names[0] == "handler" and fr[1][2] == gdb.SIGTRAMP_FRAME):
            errors.append(f"{where} (in a signal handler): frames {names}")
            return
        i = 2
    want = inner + expect
    got = names[i:i + len(want)]
    if got != want or fr[i + 1][1] != ret or any(n in HOOKS for n in names[i + len(inner):]):
        errors.append(f"{where}{' (in a signal handler)' if sig else ''}: frames {names} at "
                      f"{[hex(p) for _, p, _ in fr[:8]]}; want {want} with #{i + 1} at {ret:#x}")


def signal_check(inner, ret, expect, where):
    """a SIGUSR1 delivered at this instruction: the frames from its handler"""
    p = pc()
    gdb.execute("queue-signal SIGUSR1")
    gdb.execute("break *handler")
    gdb.execute("continue")
    gdb.execute("delete")
    if gdb.newest_frame().name() != "handler":
        errors.append(f"{where}: SIGUSR1 did not reach the handler")
        return False
    check(inner, ret, expect, where, sig=True)
    gdb.execute(f"tbreak *{p:#x}")
    gdb.execute("continue")
    if pc() != p:
        errors.append(f"{where}: not back at the instruction after the handler ({pc():#x})")
        return False
    return True


def step_through(fn, inner, ret, expect, scenario):
    """stepi from the call of fn until back in its caller, checking each instruction"""
    n = 0
    while func_at(pc()) == fn and n < 500:
        p = pc()
        visited[fn].add(p - RANGE[fn][0])
        paths.setdefault(scenario, []).append(f"{fn}+{p - RANGE[fn][0]}")
        where = f"{MODE}/{scenario}/{fn}+{p - RANGE[fn][0]}"
        check(inner, ret, expect, where)
        if SIGNALS and not signal_check(inner, ret, expect, where):
            return False
        t = insn_at(p)
        if t["asm"].startswith("call") and "ft_asm_slow" in t["asm"]:
            gdb.execute("stepi")
            if not step_through("ft_asm_slow", ["ft_asm_slow"] + inner, p + t["length"], expect, scenario):
                return False
            continue
        gdb.execute("nexti" if t["asm"].startswith("call") else "stepi")
        n += 1
    if pc() != ret:
        errors.append(f"{MODE}/{scenario}/{fn}: left at {pc():#x}, not at {ret:#x}")
        return False
    return True


def run_hook(hook, expect, scenario):
    call_pc = pc()
    ret = call_pc + insn_at(call_pc)["length"]
    gdb.execute("stepi")
    step_through(hook, [hook], ret, expect, scenario)


def goto(addr):
    gdb.execute(f"tbreak *{addr:#x}")
    gdb.execute("continue")


def calls_of(fn, hook):
    return [a for a, t in disas(fn) if "call" in t and hook in t][0]


def scenario(name, addr, hook, expect, mutate=None, restore=None):
    goto(addr)
    saved = mutate() if mutate else None
    run_hook(hook, expect, f"{name}@{hook}<-{expect[0]}")
    if restore:
        restore(saved)


def flip(off, bit=1):
    def m():
        r = rec()
        setmem(r + off, u32(r + off) ^ bit, "unsigned int")
    return m


# the TSC's high half: the record's value made to differ from the TSC's now.  Its low bit
# would not do: the high half moves by one every 2^32 ticks (~2 s, while gdb steps), and
# from an even value it then equals the stored one with that bit flipped (no escape).
THI_FAR = 1 << 30


def poke(off, val):
    def m():
        r = rec()
        old = u64(r + off)
        setmem(r + off, val(r))
        return r, old
    return m


def unpoke(off):
    def u(saved):
        r, old = saved
        setmem(r + off, old)
    return u


def set_rec(name):
    def m():
        old = rec()
        setmem(rec_slot(), sym(name))
        return old
    return m


def unset_rec(old):
    setmem(rec_slot(), old)


MODE_ADDR = sym("ft_hot")


def freeze():
    old = ev(f"*(unsigned char *){MODE_ADDR}")
    setmem(MODE_ADDR, old | FT_MODE_OFF, "unsigned char")
    return old


def thaw(old):
    setmem(MODE_ADDR, old, "unsigned char")


def ahi_same():
    """the record's address high half is the caller's: no ADDR_HI escape"""
    r = rec()
    setmem(r + R_AHI, pc() >> 32, "unsigned int")


def both(*ms):
    def m():
        for f in ms:
            f()
    return m


ring_start = poke(R_POS, lambda r: u64(r + R_WRAP) & (u64(r + R_WRAP) + 1))
due = poke(R_CD, lambda r: 0)
if os.environ.get("HOOK_CFI_FAULT"):
    goto(calls_of("leaf", "__return__"))
    if MODE == "sampled":
        due()
    target = RANGE["__return__"][0] + int(os.environ["HOOK_CFI_FAULT"])
    gdb.execute("stepi")
    while func_at(pc()) == "__return__" and pc() != target:
        gdb.execute("stepi")
    if pc() == target:
        gdb.execute("signal SIGSEGV")
    gdb.execute("quit")
sites = (("__fentry__", calls_of("leaf", "__fentry__"), ["leaf", "mid", "main"]),
         ("__return__", calls_of("leaf", "__return__"), ["leaf", "mid", "main"]),  # a leaf return
         ("__return__", calls_of("mid", "__return__"), ["mid", "main"]))           # not a leaf return
for hook, addr, exp in sites:
    scenario("plain", addr, hook, exp, ahi_same)
    scenario("addr_hi", addr, hook, exp, flip(R_AHI))
    scenario("tsc_hi", addr, hook, exp, flip(R_THI, THI_FAR))
    scenario("paused", addr, hook, exp, poke(R_MASK, lambda r: 0), unpoke(R_MASK))
    scenario("not_self", addr, hook, exp, poke(R_SELF, lambda r: 0), unpoke(R_SELF))
    scenario("dead", addr, hook, exp, set_rec("ft_thread_dummy_dead"), unset_rec)
    scenario("frozen", addr, hook, exp, freeze, thaw)
    if MODE == "sampled":
        scenario("stamp", addr, hook, exp, both(due, ahi_same))
        scenario("stamp_addr_hi", addr, hook, exp, both(due, flip(R_AHI)))
        scenario("stamp_tsc_hi", addr, hook, exp, both(due, flip(R_THI, THI_FAR)))
        scenario("stamp_ring_start", addr, hook, exp, both(due, ring_start))
    scenario("first_event", addr, hook, exp, set_rec("ft_thread_dummy_init"))
# a new thread's first event (its record is created on the hook's cold path)
goto(sym("worker"))
run_hook("__fentry__", ["worker"], "new_thread")

json.dump({"checked": checked, "errors": errors, "paths": paths,
           "insns": {h: [[a - RANGE[h][0], t] for a, t in INS[h]] for h in INS},
           "visited": {h: sorted(v) for h, v in visited.items()}},
          open(os.environ["HOOK_CFI_OUT"], "w"), indent=1)
gdb.execute("kill")
