"""String-heavy: tokenizing, counting, formatting and rewriting text."""

N = 2500

WORDS = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
         "incididunt ut labore et dolore magna aliqua ut enim ad minim veniam quis nostrud "
         "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat").split()


def make_text(n):
    out = []
    seed = 7
    for i in range(n * 60):
        seed = (seed * 1103515245 + 12345) % 2_147_483_648
        word = WORDS[seed % len(WORDS)]
        if seed % 11 == 0:
            word = word.capitalize()
        if seed % 17 == 0:
            word += ","
        if seed % 23 == 0:
            word += "."
        if seed % 31 == 0:
            word += f" {seed % 1000}"
        out.append(word)
    return " ".join(out)


def tokenize(text):
    tokens = []
    word = []
    for ch in text:
        if ch.isalnum():
            word.append(ch)
        else:
            if word:
                tokens.append("".join(word))
                word = []
            if not ch.isspace():
                tokens.append(ch)
    if word:
        tokens.append("".join(word))
    return tokens


def classify(token):
    if token.isdigit():
        return "NUM"
    if token.isalpha():
        return "CAP" if token[0].isupper() else "WORD"
    return "PUNCT"


def wrap(tokens, width):
    lines = []
    line = ""
    for tok in tokens:
        piece = tok if not line or classify(tok) == "PUNCT" else " " + tok
        if len(line) + len(piece) > width:
            lines.append(line)
            line = tok
        else:
            line += piece
    if line:
        lines.append(line)
    return lines


def report(tokens):
    kinds = {}
    for tok in tokens:
        kind = classify(tok)
        kinds[kind] = kinds.get(kind, 0) + 1
    rows = [f"{kind:<6}|{count:>6}|{count / len(tokens):>8.3%}" for kind, count in
            sorted(kinds.items())]
    return "\n".join(rows)


def title_case(line):
    return " ".join(w[:1].upper() + w[1:].lower() for w in line.split(" "))


def main(n=N):
    text = make_text(n)
    tokens = tokenize(text)
    lines = wrap(tokens, 72)
    titled = [title_case(line) for line in lines]
    replaced = [line.replace("Ut", "UT").replace("Et", "&") for line in titled]
    table = report(tokens)
    digest = sum(len(line) * (i % 7 + 1) for i, line in enumerate(replaced))
    return len(tokens), len(lines), digest, len(table)
