"""Dict/set heavy: graph search, word counts, memo tables and set algebra."""

N = 1200


def build_graph(n):
    graph = {}
    for i in range(n):
        edges = set()
        for k in (1, 7, 13, 31):
            edges.add((i * k + 3) % n)
            edges.add((i + k) % n)
        edges.discard(i)
        graph[i] = edges
    return graph


def bfs(graph, start):
    dist = {start: 0}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for other in graph[node]:
                if other not in dist:
                    dist[other] = dist[node] + 1
                    nxt.append(other)
        frontier = nxt
    return dist


def components(graph):
    seen = set()
    count = 0
    for node in graph:
        if node in seen:
            continue
        count += 1
        stack = [node]
        while stack:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            stack.extend(graph[cur] - seen)
    return count


def word_counts(n):
    counts = {}
    for i in range(n * 40):
        key = f"w{(i * 2654435761) % 997}"
        counts[key] = counts.get(key, 0) + 1
    inverted = {}
    for word, c in counts.items():
        inverted.setdefault(c, []).append(word)
    return len(counts), max(inverted), len(inverted)


def set_algebra(n):
    a = {i * 3 % 1009 for i in range(n * 4)}
    b = {i * 5 % 1009 for i in range(n * 4)}
    return len(a | b), len(a & b), len(a - b), len(a ^ b)


def main(n=N):
    graph = build_graph(n)
    total = 0
    for start in range(0, n, 3):
        total += sum(bfs(graph, start).values())
    return total, components(graph), word_counts(n), set_algebra(n)
