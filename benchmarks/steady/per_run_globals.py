"""A program that rebinds module globals at the start of every run, as benchmark programs
written as scripts often do (``planner = Planner()``, a fresh table each run): a typed
stage that relied on the globals' identity rebuilt its code on every run."""

N = 20000


class Planner:
    def __init__(self, width):
        self.width = width
        self.steps = []

    def plan(self, i):
        step = (i * 7) % self.width
        self.steps.append(step)
        return step


planner = None
table = None
LIMITS = (3, 4.5)


def work(n):
    total = 0.0
    for i in range(n):
        total += planner.plan(i) * LIMITS[1] + table[i % len(table)]
    return total


def reset():
    """The program's state, made afresh for every run (as a harness resets a module's
    state between runs, without a ``global`` statement in the program)."""
    state = globals()
    state["planner"] = Planner(13)
    state["table"] = [float(i) for i in range(17)]


def main(n=N):
    reset()
    return work(n)
