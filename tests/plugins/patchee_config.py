"""A settings module the Patch tests patch attributes of."""

URL = "https://production.example"
TIMEOUT = 30
GREETING = "hello"
