"""Functions the Patch tests run."""

from __future__ import annotations

import os
import threading
import time

from tests.plugins import patchee_config as config
from tests.plugins.patchee_config import GREETING

RATE = 2


def fetch(key: str) -> str:
    return f"real:{key}"


def load(key: str) -> str:
    return fetch(key).upper()


def service(keys: list[str]) -> list[str]:
    return [load(k) for k in keys]


class Store:
    def __init__(self, name: str) -> None:
        self.name = name

    def get(self, key: str) -> str:
        return f"{self.name}:{key}"

    @classmethod
    def default(cls) -> Store:
        return cls("default")

    @staticmethod
    def version() -> int:
        return 1


class CachedStore(Store):
    def get(self, key: str) -> str:
        return "cached-" + super().get(key)


def use_store(key: str) -> tuple[str, str, str, int]:
    store = Store("db")
    return store.get(key), Store.default().get(key), CachedStore("c").get(key), \
        Store.version()


def make_store() -> object:
    return Store("x")


def price(amount: int) -> int:
    return amount * RATE


def uses_config() -> tuple[str, int]:
    return config.URL, config.TIMEOUT


def greet() -> str:
    return GREETING


def clock() -> tuple[float, str]:
    return time.time(), os.getcwd()


def wait_and_load(barrier: threading.Barrier, key: str) -> str:
    barrier.wait()
    return load(key)
