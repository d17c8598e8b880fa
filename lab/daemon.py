"""What the labs' long-running daemons share: stopping and killing a
process started with `Host.popen` (its own session, so its process group
is its pid), and reading a Prometheus text exposition into numbers.

    class Upf(Daemon):
        def start(self):
            self.log = open(..., "a")
            self.proc = host.popen(argv, stdout=self.log, stderr=self.log)
"""
import os
import signal
import subprocess


class Daemon:
    """A lab process with `proc` (subprocess.Popen, or None before start)
    and `log` (its open log file, or None)."""

    proc = None
    log = None
    stop_timeout = 10

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """kill -9 of its whole process group: no clean-up of any kind."""
        if self.running():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        """SIGTERM, then kill() if it has not exited within stop_timeout."""
        if self.running():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.log:
            self.log.close()
            self.log = None


def prometheus_samples(text):
    """{'name{labels}': value} of a Prometheus text exposition; comments,
    blank lines and values that are not numbers are left out."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, val = line.rpartition(" ")
        try:
            out[name] = float(val)
        except ValueError:
            pass
    return out
