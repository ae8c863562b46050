"""Numeric: the spectral norm of an infinite matrix (generators and function calls)."""

N = 190


def eval_a(i, j):
    return 1.0 / ((i + j) * (i + j + 1) // 2 + i + 1)


def eval_a_times_u(u):
    n = len(u)
    return [sum(eval_a(i, j) * u_j for j, u_j in enumerate(u)) for i in range(n)]


def eval_at_times_u(u):
    n = len(u)
    return [sum(eval_a(j, i) * u_j for j, u_j in enumerate(u)) for i in range(n)]


def eval_ata_times_u(u):
    return eval_at_times_u(eval_a_times_u(u))


def main(n=N):
    u = [1.0] * n
    v = u
    for _ in range(10):
        v = eval_ata_times_u(u)
        u = eval_ata_times_u(v)
    vbv = vv = 0.0
    for ue, ve in zip(u, v):
        vbv += ue * ve
        vv += ve * ve
    return round((vbv / vv) ** 0.5, 9)
