"""Recurse until RecursionError, natively and under each kind of context, and print the
depth reached: ``python recursion_program.py LIMIT SHAPE...``. Run in a child process, as a
C stack overflow kills the process (tests/runtime/test_deep_recursion.py)."""

import sys

import splice
from splice.plugins import Tracer


def plain(n=0):
    try:
        return plain(n + 1)
    except RecursionError:
        return n


class Node:
    def __init__(self, n):
        try:
            self.child = Node(n + 1)
            self.depth = self.child.depth
        except RecursionError:
            self.child = None
            self.depth = n


def constructor():
    return Node(0).depth


class Walker:
    def walk(self, n=0):
        try:
            return self.walk(n + 1)
        except RecursionError:
            return n


def method():
    return Walker().walk()


class Recurser:
    def __call__(self, n=0):
        try:
            return self(n + 1)
        except RecursionError:
            return n


def callable_object():
    return Recurser()()


class Hooked(splice.Plugin):
    def prehook(self, fn, args, kwargs):
        pass


class Typed(splice.Plugin):
    def typed(self, ir):
        return ir


MODES = {"native": None, "context": splice.Plugin, "hooked": Hooked, "tracer": Tracer,
         "typed": Typed}

if __name__ == "__main__":
    limit, shapes = int(sys.argv[1]), sys.argv[2:]
    sys.setrecursionlimit(limit)
    for shape in shapes:
        for mode, plugin in MODES.items():
            program = globals()[shape]
            depth = program() if plugin is None else plugin().run(program)
            print(shape, mode, depth, flush=True)
