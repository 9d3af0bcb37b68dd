"""The Python side of bench/turns/bench_turns.hpp: taking turns of training steps with
another process through two FIFOs, with bench/compare_seq2seq.sh (TURNS=N) as
the arbiter. Once ready: write 'r' to OUT. Before each turn: read 1 byte from
IN (EOF: no more turns). After each turn: write 't' to OUT; after the last
step: write 'e' and close both.
The first turn also runs the warm-up steps, every later turn one untimed step
first (the other process has left the caches cold)."""
import errno
import os
import select
import signal
import stat
import time


class Turns:
    def __init__(self, in_path, out_path, steps, warmup, timeout=300.0):
        if steps < 1:
            raise SystemExit(f"--turn-steps must be at least 1, not {steps}")
        for path in (in_path, out_path):
            try:
                mode = os.stat(path).st_mode
            except OSError as e:
                raise SystemExit(f"--turn-fifos: {path}: {e.strerror}")
            if not stat.S_ISFIFO(mode):
                raise SystemExit(f"--turn-fifos: {path} is not a FIFO (make one with mkfifo)")
        self.steps, self.warmup, self.timeout = steps, warmup, timeout
        self.turns, self.free = 0, False
        deadline = time.monotonic() + timeout
        while True:  # a FIFO's write end opens only once the arbiter reads it
            try:
                self.out = os.open(out_path, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:
                if e.errno != errno.ENXIO or time.monotonic() > deadline:
                    raise SystemExit(f"--turn-fifos: nobody opened {out_path} for reading: {e}")
                time.sleep(0.005)
        self.inp = os.open(in_path, os.O_RDONLY | os.O_NONBLOCK)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        os.write(self.out, b"r")

    def _close(self):
        os.close(self.inp)
        os.close(self.out)
        self.free = True

    def before_step(self, i):
        """Waits for the go at the start of a turn; True: run an untimed step first."""
        t = i - self.warmup  # the timed step's index; the warm-up belongs to the first turn
        if self.free or not (i == 0 or (t > 0 and t % self.steps == 0)):
            return False
        # poll() alone cannot tell that the arbiter has closed its end (Linux
        # reports POLLHUP on a FIFO only if a writer came and went after our
        # open), so poll in short slices and try a read after each: 0 bytes is
        # no writer, an arbiter still starting before the first go, one that
        # has left after it.
        poller = select.poll()
        poller.register(self.inp, select.POLLIN)
        deadline = time.monotonic() + self.timeout
        while True:
            if time.monotonic() > deadline:
                raise SystemExit(f"--turn-fifos: no turn given in {self.timeout:.0f} s")
            poller.poll(50)
            try:
                got = os.read(self.inp, 1)
            except BlockingIOError:
                continue
            if got:
                self.turns += 1
                return t > 0
            if self.turns:  # the arbiter closed its end: run on without turns
                self.free = True
                return False
            time.sleep(0.005)

    def after_step(self, i, last):
        if self.free:
            return
        t = i - self.warmup
        if last or (t >= 0 and (t + 1) % self.steps == 0):
            try:
                os.write(self.out, b"e" if last else b"t")
            except BrokenPipeError:
                self.free = True
            if last and not self.free:
                self._close()
