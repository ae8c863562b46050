"""A class made by a function, for inference's caches of what it found about classes
(test_class_caches.py). No code of this module stores an attribute outside the methods of a
class, so what a ``Counter`` holds comes from its methods alone."""


def make_counter() -> type:
    class Counter:
        def __init__(self):
            self.count = 0

        def bump(self):
            self.count = self.count + 1

        def describe(self):  # stores nothing (until a test gives it other code)
            return "a counter"

    return Counter


class Labels:
    def relabel(self):  # added to a ``Counter`` by a test: then it stores a str too
        self.count = "many"


def read_count(counter):
    return counter.count
