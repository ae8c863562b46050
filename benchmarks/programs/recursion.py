"""Recursive: Fibonacci, Takeuchi and n-queens by backtracking."""

N = 30
QUICK = 22  # --quick (the work grows exponentially with n)


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def tak(x, y, z):
    if y >= x:
        return z
    return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y))


def queens(n):
    count = 0
    cols = set()
    diag1 = set()
    diag2 = set()

    def place(row):
        nonlocal count
        if row == n:
            count += 1
            return
        for col in range(n):
            if col in cols or row + col in diag1 or row - col in diag2:
                continue
            cols.add(col)
            diag1.add(row + col)
            diag2.add(row - col)
            place(row + 1)
            cols.remove(col)
            diag1.remove(row + col)
            diag2.remove(row - col)

    place(0)
    return count


def main(n=N):
    return fib(n), tak(n - 6, n // 2 - 2, n // 4), queens(max(4, n // 3 + 1))
