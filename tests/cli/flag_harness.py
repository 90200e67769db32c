"""Every flag of every subcommand, given hostile values.

For each subcommand `tessera --help` lists, and each option its `--help` lists that takes a
value, the flag is given, on top of a cheap base command line that reads it, each of: nan, inf,
-0, 1e308, the empty string, a directory, a missing path, an unreadable file, a 128 KiB value
(131,071 bytes and its NUL: the most Linux passes as one argument)
and a 10 MB file of random bytes. What is asserted of each run:
  - it exits 0, 1 or 2 (never a signal, never another code);
  - a non-zero exit prints, as its last line on stderr, one line naming the flag or the value
    given (a path is named by itself);
  - it stays within a bound that only guards against a runaway (not a timed assertion): a
    one-shot command must finish within 90 s of CPU (900 s of wall) and 3 GB resident;
  - a daemon (schedule, extender, agent) either exits or logs the line that says it serves
    (`... on 127.0.0.1:PORT`, its flags accepted) within 300 s; one that serves and is still
    running 4 s later, once settled (no thread runnable or in disk wait, its CPU still), must
    be idle (under a fifth of a core: a NaN interval must not make a daemon spin) and answer
    /readyz. Both waits count from what the daemon does, not from a fixed span of wall: on a
    loaded machine a sanitized daemon can take tens of seconds to reach the line that rejects
    its flag.
Run by the test command with TESSERA_BIN set; prints "N passed, M failed" and exits 1 on any
failure.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from cli_cases import BIN, ROOT, cut_openb, run_cases
DAEMONS = {"schedule", "extender", "agent"}
ONE_SHOT_CPU_S, ONE_SHOT_WALL_S, RSS_LIMIT_KB = 90, 900, 3 * 1024 * 1024
DAEMON_S, SETTLE_S = 4.0, 300
# The line each daemon logs once its flags are accepted and its port is open, naming the port.
SERVING = re.compile(r"\bon 127\.0\.0\.1:(\d+)\b")


def help_of(args):
    return subprocess.run([BIN] + args + ["--help"], capture_output=True, text=True).stdout


def subcommands(args=()):
    out, found = help_of(list(args)), []
    section = False
    for line in out.splitlines():
        if line.startswith("Subcommands:"):
            section = True
            continue
        if section:
            m = re.match(r"  (\S+)\s", line)
            if m:
                found.append(m.group(1))
            elif line and not line.startswith(" "):
                section = False
    return found


def value_options(args):
    """The long options of `args`'s help that take a value (a type follows the name)."""
    opts = []
    for line in help_of(args).splitlines():
        m = re.match(r"\s+(?:-\w,)?(--[\w-]+) ([A-Z]+)\b", line)
        if m and m.group(1) not in ("--help", "--version"):
            opts.append(m.group(1))
    return opts


class Env:
    def __init__(self, tmp):
        self.tmp = tmp
        self.dir = os.path.join(tmp, "a-directory")
        os.mkdir(self.dir)
        self.missing = os.path.join(tmp, "missing", "nothing.csv")
        self.unreadable = os.path.join(tmp, "unreadable.csv")
        with open(self.unreadable, "w") as f:
            f.write("row,column,value\n")
        os.chmod(self.unreadable, 0)  # root reads it all the same
        self.big = os.path.join(tmp, "big.bin")
        with open(self.big, "wb") as f:
            f.write(os.urandom(10 * 1024 * 1024))
        # A small openb trace and node list, so that openb-alloc runs in a moment.
        self.trace, self.nodes = cut_openb(tmp, pods=300, nodes=40)
        # A kubeconfig naming a server nobody serves: a daemon that accepts its flags retries.
        self.kubeconfig = os.path.join(tmp, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                    "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
                    "users: [{name: u, user: {token: t}}]\n"
                    "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
        self.profile = os.path.join(ROOT, "data", "h200-campaign", "profile.csv")
        self.fake_node = os.path.join(ROOT, "tests", "agent", "fake_node.yaml")
        # One service on one GPU model: `tessera plan` profiles and plans it in a moment.
        self.services = os.path.join(tmp, "services.yaml")
        with open(self.services, "w") as f:
            f.write("gpus: [V100-32GB]\nservices:\n  - name: a\n    app: onnx/resnet50\n"
                    "    slo_qps: 5\n")

    def values(self):
        return [("nan", "nan"), ("inf", "inf"), ("-0", "-0"), ("1e308", "1e308"),
                ("empty", ""), ("directory", self.dir), ("missing path", self.missing),
                ("unreadable file", self.unreadable), ("128 KiB", "x" * 131071),
                ("10 MB file", self.big)]

    def base(self, cmd, flag):
        """A cheap command line of `cmd` that reads `flag`."""
        sim = {
            "--workloads": ["--experiment", "thesis-scale", "--cluster-nodes", "1", "--seeds",
                            "1", "--policy", "max"],
            "--unprofiled": ["--experiment", "thesis-scale", "--workloads", "12",
                             "--cluster-nodes", "1", "--seeds", "1", "--policy", "max"],
            "--cluster-nodes": ["--experiment", "packing", "--seeds", "1", "--policy",
                                "first-fit"],
            "--trace": ["--experiment", "openb-alloc", "--nodes", self.nodes, "--policy",
                        "first-fit"],
            "--nodes": ["--experiment", "openb-alloc", "--trace", self.trace, "--policy",
                        "first-fit"],
            "--inflation": ["--experiment", "openb-alloc", "--trace", self.trace, "--nodes",
                            self.nodes, "--policy", "first-fit"],
            "--data": ["--experiment", "calibrate"],
            "--apps": ["--experiment", "thesis", "--seeds", "1", "--policy", "max"],
            # The small openb replay writes its report under --out in a moment (the knots
            # experiment took 8 s a case under ASan, and over 90 s beside a loaded machine).
            "--out": ["--experiment", "openb-alloc", "--trace", self.trace, "--nodes",
                      self.nodes, "--policy", "first-fit"],
            "--experiment": ["--seeds", "1"],
        }
        if cmd == ["simulate"]:
            return sim.get(flag, ["--experiment", "packing", "--cluster-nodes", "1",
                                  "--seeds", "1", "--policy", "first-fit"])
        if cmd[0] == "predict":
            sub = cmd[1] if len(cmd) > 1 else ""
            data = os.path.join(ROOT, "data", "h200-campaign")
            if sub == "interference":
                return ["--data", os.path.join(data, "interference.csv"), "--seeds", "1"]
            if sub == "contention":
                return ["--data", data]
            if sub in ("evaluate", "sweep"):
                return ["--data", self.profile, "--seeds", "1"]
            if sub == "complete":
                return ["--data", self.profile] + (
                    [] if flag == "--out" else ["--out", os.path.join(self.tmp, "complete.csv")])
            return []
        if cmd == ["explain"]:
            return ["--policy", "max"] if flag != "--policy" else []
        if cmd == ["plan"]:
            return [] if flag == "--example" else [self.services]
        if cmd == ["agent"]:
            return ["--fake", self.fake_node] + ([] if flag == "--listen" else ["--once"])
        if cmd[0] in ("schedule", "extender"):
            # --features is read only beside a profile: give it one so the file is parsed.
            # The store is memory, so that a daemon whose flags are fine serves (the extender
            # exits when its store does not answer); the store's own flags get the test
            # command's Redis (scripts/harness.sh) for what they leave.
            if flag in ("--store", "--redis", "--redis-prefix"):
                redis = os.environ.get("TESSERA_TEST_REDIS")
                store = ["--redis", redis] if redis and flag != "--redis" else []
            else:
                store = ["--store", "memory"]
            return ["--kubeconfig", self.kubeconfig, "--listen", "127.0.0.1:0"] + store + (
                ["--profile", self.profile] if flag == "--features" else [])
        return []


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runnable(pid):
    """Whether any thread of `pid` is running, waiting for a CPU (state R) or for the disk (D:
    a page of the sanitized binary being read in)."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("R", "D"):
                    return True
    except OSError:
        pass
    return False


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def is_daemon(cmd, flag, env):
    return cmd[0] in DAEMONS and ("--once" not in env.base(cmd, flag))


def run_one(cmd, flag, label, value, env):
    """None when the run behaves; else what went wrong."""
    daemon = is_daemon(cmd, flag, env)
    args = [BIN] + cmd + [a for a in env.base(cmd, flag)]
    if flag == "--listen" and "--listen" in args:
        i = args.index("--listen")
        del args[i:i + 2]
    args += [flag, value]
    if daemon and "--listen" not in args:
        args += ["--listen", "127.0.0.1:0"]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         errors="replace", cwd=env.tmp, start_new_session=True)
    lines, served = [], []

    def read():
        for line in p.stderr:
            lines.append(line)
            m = SERVING.search(line)
            if m and not served:
                served.append(int(m.group(1)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    start, peak, ready_at = time.monotonic(), 0, None
    # A daemon's DAEMON_S count from the line that says it serves, and end once it has settled:
    # two samples in a row with no thread runnable and no CPU spent between them.
    busy_streak, last_cpu = 0, None
    while p.poll() is None:
        now = time.monotonic()
        try:
            cpu = cpu_s(p.pid)
        except OSError:
            continue
        if daemon:
            if ready_at is None and served:
                ready_at = now
            if ready_at is None and now - start >= SETTLE_S:
                break
            if ready_at is not None and now - ready_at >= DAEMON_S and (
                    busy_streak == 0 or now - ready_at >= SETTLE_S):
                break
        elif cpu >= ONE_SHOT_CPU_S or now - start >= ONE_SHOT_WALL_S:
            break
        peak = max(peak, rss_kb(p.pid))
        if peak > RSS_LIMIT_KB:
            break
        time.sleep(0.05)
        if daemon:
            moving = last_cpu is not None and cpu > last_cpu
            busy_streak = 2 if moving or runnable(p.pid) else max(0, busy_streak - 1)
            last_cpu = cpu
    problem = None
    if p.poll() is None:
        if peak > RSS_LIMIT_KB:
            problem = f"ran away: {peak // 1024} MB resident"
        elif not daemon:
            problem = (f"still running after {cpu_s(p.pid):.0f} s of CPU, "
                       f"{time.monotonic() - start:.0f} s of wall")
        elif not served:
            problem = (f"neither exited nor said it serves within {SETTLE_S} s"
                       + (f" ({ready_problem(value)})" if flag == "--listen" else ""))
        else:
            t0, c0 = time.monotonic(), cpu_s(p.pid)
            time.sleep(1.0)
            share = (cpu_s(p.pid) - c0) / (time.monotonic() - t0)
            if share > 0.2:
                problem = f"a daemon spinning at {share:.0%} of a core"
            else:
                problem = ready_problem(value if flag == "--listen" else f"127.0.0.1:{served[0]}")
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        reader.join(5)
        return problem
    reader.join(5)
    rc = p.returncode
    lines = [line for line in lines if line.strip()]
    if rc < 0:
        return f"killed by signal {-rc}: {lines[-1].strip() if lines else ''}"
    if rc not in (0, 1, 2):
        return f"exit {rc}"
    if rc != 0:
        last = lines[-1] if lines else ""
        named = flag in last or (value and value[:200] in last) or (
            value and os.path.basename(value) and os.path.basename(value) in last)
        if not named:
            return f"exit {rc} without naming {flag}: {last[:300]!r}"
        if not daemon and cmd[0] not in DAEMONS and len(lines) > 1:
            return f"exit {rc} with {len(lines)} lines on stderr: {lines[:3]!r}"
    return None


def ready_problem(value):
    """A daemon that accepted --listen VALUE must serve /readyz there (any status)."""
    m = re.match(r"^\[?([^\]]*)\]?:(\d+)$", value)
    if not m:
        return f"--listen {value!r} accepted, but it names no host:port"
    host = m.group(1) or "127.0.0.1"
    try:
        urllib.request.urlopen(f"http://{host}:{m.group(2)}/readyz", timeout=2)
    except urllib.error.HTTPError:
        return None
    except OSError as e:
        return f"--listen {value!r} accepted, /readyz does not answer: {e}"
    return None


def main():
    tmp = tempfile.mkdtemp(prefix="tessera-flags-")
    try:
        env = Env(tmp)
        cmds = []
        for sub in subcommands():
            nested = subcommands([sub])
            cmds += [[sub, n] for n in nested] if nested else [[sub]]
        cases = [(cmd, flag, label, value) for cmd in cmds for flag in value_options(cmd)
                 for label, value in env.values()]
        print(f"{len(cmds)} subcommands")
        # A daemon that accepts its flag is watched for DAEMON_S + 1 s, mostly asleep: those
        # runs go sixteen at a time; one-shot runs compute, so at most four of them at once
        # (the bounds are runaway guards, so contention cannot fail a case, only slow it).
        computing = threading.Semaphore(4)

        def check(c):
            if is_daemon(c[0], c[1], env):
                return run_one(c[0], c[1], c[2], c[3], env)
            with computing:
                return run_one(c[0], c[1], c[2], c[3], env)

        return run_cases(cases, check, 16,
                         lambda c: f"tessera {' '.join(c[0])} {c[1]} <{c[2]}>")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
