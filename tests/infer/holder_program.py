"""A list attribute filled by a method and read by a function of the module; no other code
of this module reads an attribute, so inference tracks the list (test_interpreter.py)."""


class Holder:
    def __init__(self):
        self.items = []

    def add(self, v):
        self.items.append(v)


def via_object(n):
    h = Holder()
    h.add(1)
    h.add("two")
    return h.items[-1]
