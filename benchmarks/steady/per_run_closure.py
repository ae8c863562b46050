"""A program that binds a fresh closure to a module global on every run: each run's
function is a new object, so code that relied on the global's identity is stale every run
(issue 15: after a bounded number of such invalidations the global should be treated as
variable; not built yet, so this program shows the rebuilds that remain)."""

N = 20000


def make_scale(factor):
    def scale(x):
        return x * factor
    return scale


scale = None


def work(n):
    total = 0
    for i in range(n):
        total += scale(i)
    return total


def reset():
    """A fresh closure each run, bound without a ``global`` statement (as a harness
    resetting the module's state would)."""
    globals()["scale"] = make_scale(3)


def main(n=N):
    reset()
    return work(n)
