"""Rate-limiting an output by the time axis it belongs to (plant or state time), for the
auxiliary outputs of the nodes in real time (ROS-free; tested in test/plants/test_sim_runner.py)."""

__all__ = ['Decimator']


class Decimator:
    """At most one output per ``period`` of a time axis (plant or state time [s]): :meth:`due`
    says whether the output at ``t`` goes out. ``period`` <= 0: every time. A time that goes
    backwards (a reset, a new plant clock) is always due."""

    def __init__(self, period=0.0):
        self.period, self.last = float(period), None

    @classmethod
    def from_rate(cls, rate):
        """``rate`` [Hz]; 0 or None = every time."""
        return cls(1.0 / float(rate) if rate else 0.0)

    def due(self, t):
        if self.period <= 0.0 or self.last is None or t < self.last or t - self.last >= self.period - 1e-9:
            self.last = t
            return True
        return False
