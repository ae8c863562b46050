"""``python -m splice``."""

from splice.cli import main

main()
