"""The README's numeric program, as a script: ``simulate`` sums ``math.sin``.

    python examples/simulate.py 100
    splice run -p 'splice.plugins:FastMath({math.sin: fastfns.fast_sin})' examples/simulate.py 100

``fastfns`` is a module of this folder (the program's folder comes first on ``sys.path``,
for the plugin's arguments as for the program's imports).
"""

import math
import sys


def simulate(n):
    total = 0.0
    for i in range(n):
        total += math.sin(i / n)
    return total


if __name__ == "__main__":
    print(round(simulate(int(sys.argv[1]) if len(sys.argv) > 1 else 100), 3))
