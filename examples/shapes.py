"""A small example module for ``splice show``."""

import math


class Circle:
    def __init__(self, radius):
        self.radius = radius

    def area(self):
        return math.pi * self.radius ** 2


def total_area(shapes, *, scale=1.0):
    """Sum the areas of the shapes that have a positive radius."""
    total = 0.0
    for shape in shapes:
        if shape.radius > 0 and shape.radius < 1e6:
            total += shape.area() * scale
    return total


def areas(shapes):
    return [round(s.area(), 2) for s in shapes if s.radius]


def countdown(n):
    while n > 0:
        received = yield n
        n -= received or 1
