"""Planning tasks of the latent-lookahead paper, tokenized, with a verifier for each.

Every task is a list of (prompt, answer) token sequences in one shared vocabulary:

- `sudoku4` / `sudoku9`: reasoning-gym's `mini_sudoku` / `sudoku` puzzles. Prompt: the cells row
  by row (digit or `_`), rows separated by `|`, then `=`. Answer: the solved grid in the same
  format (4x4: 16 digits + 3 separators = 19 tokens; 9x9: 81 + 8 = 89 tokens).
- `sudoku4_singles`: the same 4x4 puzzles (it reads `sudoku4`'s settings), answered cell by cell in
  the order naked singles fill them: (cell, digit) pairs, then `<eos>`. Each step fills the first
  empty cell, row by row, that has one candidate left, so every answer token follows from the
  prompt and the tokens before it: a task where foresight is not needed (latent lookahead's
  falsifier). Every 4x4 puzzle of the generator is solved by naked singles; one that is not is an
  error.
- `maze`: maze-dataset DFS mazes. Prompt: one token per cell giving its open passages
  (down + 2 * right, 4 codes), then `?`, start cell, goal cell, `=`. Answer: the cells of the
  solution path (start and goal included), then `<eos>`.
- `prosqa`: ProsQA-style graph reasoning (a regeneration: Coconut's training split is not
  available offline). A random DAG over named concepts with two sources; the question names
  the entity (one source) and two options, one reachable from it and one not. Prompt: the edges
  as (parent, child) pairs in random order, then `?`, entity, the two options in random order,
  `=`. Answer: the shortest chain of concepts from the entity to the reachable option, `<eos>`.

A verifier scores an answer by what it must satisfy, not by string equality: a Sudoku answer must
be a valid completion of the puzzle; a maze answer a simple path from start to goal through open
passages; a ProsQA answer a chain of edges from the entity ending at one of the two options.
"""

from __future__ import annotations

from collections import deque

import numpy as np

# ---------------------------------------------------------------- vocabulary

PAD, EOS, PAUSE, SEP, ROW, QUERY, EMPTY = range(7)
DIGIT0 = 6  # token of digit d is DIGIT0 + d (d = 1..9)
WALL0 = 16  # token of a maze cell code c (0..3) is WALL0 + c
NODE0 = 20  # token of node / cell k (0..63) is NODE0 + k
MAX_NODES = 64
VOCAB_SIZE = NODE0 + MAX_NODES
TASKS = ("sudoku4", "sudoku9", "maze", "prosqa", "sudoku4_singles")
SETTINGS_OF = {"sudoku4_singles": "sudoku4"}  # a task that reads another task's data and training keys


def settings_task(task: str) -> str:
    """The task whose `data` and `training` settings `task` uses (itself, for the paper's tasks)."""
    return SETTINGS_OF.get(task, task)


def digit(d: int) -> int:
    return DIGIT0 + d


def node(k: int) -> int:
    if not 0 <= k < MAX_NODES:
        raise ValueError(f"node {k} outside the vocabulary (0..{MAX_NODES - 1})")
    return NODE0 + k


# ---------------------------------------------------------------- sudoku


def grid_tokens(grid: list[list[int]]) -> list[int]:
    """Rows of digits (0 = empty) separated by ROW."""
    out: list[int] = []
    for r, row in enumerate(grid):
        if r:
            out.append(ROW)
        out += [EMPTY if v == 0 else digit(v) for v in row]
    return out


def parse_grid(tokens: list[int], size: int) -> list[list[int]] | None:
    """Inverse of `grid_tokens` (EMPTY -> 0); None when the tokens are not a size x size grid."""
    rows, row = [], []
    for t in tokens:
        if t == ROW:
            rows.append(row)
            row = []
        elif t == EMPTY:
            row.append(0)
        elif DIGIT0 < t <= DIGIT0 + size:
            row.append(t - DIGIT0)
        else:
            return None
    rows.append(row)
    if len(rows) != size or any(len(r) != size for r in rows):
        return None
    return rows


def sudoku_example(puzzle: list[list[int]], solution: list[list[int]]) -> tuple[list[int], list[int]]:
    return grid_tokens(puzzle) + [SEP], grid_tokens(solution)


def _solved(grid: list[list[int]], size: int) -> bool:
    """True when every row, column and box of a full grid holds each digit once."""
    box = int(round(size ** 0.5))
    full = set(range(1, size + 1))
    rows = [set(row) for row in grid]
    cols = [{grid[r][c] for r in range(size)} for c in range(size)]
    boxes = [{grid[br + r][bc + c] for r in range(box) for c in range(box)}
             for br in range(0, size, box) for bc in range(0, size, box)]
    return all(s == full for s in rows + cols + boxes)


def verify_sudoku(prompt: list[int], answer: list[int], size: int) -> bool:
    """True when `answer` is a valid completion of the puzzle in `prompt`."""
    puzzle = parse_grid([t for t in prompt if t not in (PAD, SEP)], size)
    grid = parse_grid([t for t in answer if t not in (PAD, EOS)], size)
    if puzzle is None or grid is None:
        return False
    for r in range(size):
        for c in range(size):
            if puzzle[r][c] and puzzle[r][c] != grid[r][c]:
                return False
    return _solved(grid, size)


def _candidates(grid: list[list[int]], r: int, c: int) -> list[int]:
    size = len(grid)
    box = int(round(size ** 0.5))
    br, bc = r // box * box, c // box * box
    used = (set(grid[r]) | {grid[i][c] for i in range(size)}
            | {grid[br + i][bc + j] for i in range(box) for j in range(box)})
    return [d for d in range(1, size + 1) if d not in used]


def singles_order(puzzle: list[list[int]]) -> list[tuple[int, int]]:
    """(cell, digit) in the order naked singles fill `puzzle`: each step the first empty cell, row by
    row, with one candidate left. ValueError when naked singles alone do not solve it."""
    grid = [list(row) for row in puzzle]
    size, out = len(grid), []
    while empty := [(r, c) for r in range(size) for c in range(size) if not grid[r][c]]:
        step = next(((r, c, cs[0]) for r, c in empty if len(cs := _candidates(grid, r, c)) == 1), None)
        if step is None:
            raise ValueError(f"naked singles stall on the puzzle {puzzle} after {len(out)} cells")
        r, c, d = step
        grid[r][c] = d
        out.append((r * size + c, d))
    return out


def singles_example(puzzle: list[list[int]], solution: list[list[int]]) -> tuple[list[int], list[int]]:
    """The puzzle's prompt, answered as (cell, digit) pairs in naked-single order, then `<eos>`;
    ValueError when the filling is not `solution` (a puzzle with another solution)."""
    order = singles_order(puzzle)
    size = len(puzzle)
    filled = [list(row) for row in puzzle]
    for cell, d in order:
        filled[cell // size][cell % size] = d
    if filled != [list(row) for row in solution]:
        raise ValueError(f"naked singles fill the puzzle {puzzle} otherwise than its solution {solution}")
    answer = [t for cell, d in order for t in (node(cell), digit(d))]
    return grid_tokens(puzzle) + [SEP], answer + [EOS]


def verify_singles(prompt: list[int], answer: list[int], size: int = 4) -> bool:
    """True when `answer`'s (cell, digit) pairs, up to `<eos>`, fill each empty cell of the puzzle once
    and solve it (in any order)."""
    puzzle = parse_grid([t for t in prompt if t not in (PAD, SEP)], size)
    body = list(answer[:answer.index(EOS)] if EOS in answer else answer)
    while body and body[-1] == PAD:  # right padding only: a PAD between pairs is a wrong answer
        body.pop()
    if puzzle is None or len(body) % 2:
        return False
    grid = [list(row) for row in puzzle]
    for cell_t, digit_t in zip(body[::2], body[1::2], strict=True):
        cell, d = cell_t - NODE0, digit_t - DIGIT0
        if not (0 <= cell < size * size and 1 <= d <= size) or grid[cell // size][cell % size]:
            return False
        grid[cell // size][cell % size] = d
    return all(all(row) for row in grid) and _solved(grid, size)


def generate_sudoku(size: int, n: int, min_empty: int, max_empty: int, seed: int,
                    example=sudoku_example) -> list[tuple]:
    """n distinct puzzles from reasoning-gym (`mini_sudoku` for 4x4, `sudoku` for 9x9), each made into
    (prompt, answer) by `example(puzzle, solution)`."""
    import reasoning_gym

    name = {4: "mini_sudoku", 9: "sudoku"}[size]
    seen, out = set(), []
    batch, offset = n, 0
    while len(out) < n:
        ds = reasoning_gym.create_dataset(name, min_empty=min_empty, max_empty=max_empty,
                                          size=batch + offset, seed=seed)
        for i in range(offset, batch + offset):
            meta = ds[i]["metadata"]
            key = str(meta["puzzle"])
            if key not in seen and len(out) < n:
                seen.add(key)
                out.append(example(meta["puzzle"], meta["solution"]))
        offset, batch = offset + batch, max(16, n - len(out))
    return out


# ---------------------------------------------------------------- maze


def maze_example(connections: np.ndarray, start: tuple[int, int], goal: tuple[int, int],
                 path: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """`connections` (2, g, g) bool: [0] open to the cell below, [1] open to the cell right."""
    g = connections.shape[1]
    codes = (connections[0].astype(int) + 2 * connections[1].astype(int)).flatten()
    prompt = [WALL0 + int(c) for c in codes] + [QUERY, node(start[0] * g + start[1]),
                                                node(goal[0] * g + goal[1]), SEP]
    return prompt, [node(r * g + c) for r, c in path] + [EOS]


def parse_maze(prompt: list[int], grid_n: int) -> tuple[list[int], int, int] | None:
    """(cell codes, start cell, goal cell) of a maze prompt; None when it is not one."""
    prompt = [t for t in prompt if t != PAD]
    g = grid_n
    codes = [t - WALL0 for t in prompt[:g * g]]
    if len(prompt) < g * g + 3 or any(not 0 <= c < 4 for c in codes) or prompt[g * g] != QUERY:
        return None
    return codes, prompt[g * g + 1] - NODE0, prompt[g * g + 2] - NODE0


def path_cells(answer: list[int], grid_n: int) -> list[int] | None:
    """The cells of an answer up to `<eos>`; None when a token is not a cell of the grid."""
    path = []
    for t in answer:
        if t == EOS:
            break
        if not NODE0 <= t < NODE0 + grid_n * grid_n:
            return None
        path.append(t - NODE0)
    return path


def verify_maze(prompt: list[int], answer: list[int], grid_n: int) -> bool:
    """True when `answer` is a simple path from start to goal through open passages."""
    g = grid_n
    maze, path = parse_maze(prompt, g), path_cells(answer, g)
    if maze is None or path is None:
        return False
    codes, start, goal = maze
    if not path or path[0] != start or path[-1] != goal or len(set(path)) != len(path):
        return False
    for a, b in zip(path, path[1:], strict=False):
        lo, hi = min(a, b), max(a, b)
        down = hi - lo == g and codes[lo] & 1
        right = hi - lo == 1 and lo // g == hi // g and codes[lo] & 2
        if not (down or right):
            return False
    return True


def generate_mazes(grid_n: int, n: int, seed: int) -> list[tuple]:
    """n DFS mazes with their solutions from maze-dataset (generated locally, never downloaded)."""
    import warnings

    from maze_dataset import MazeDataset, MazeDatasetConfig
    from maze_dataset.generation import LatticeMazeGenerators

    if grid_n * grid_n > MAX_NODES:
        raise ValueError(f"maze grid_n={grid_n} has more cells than the vocabulary ({MAX_NODES})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # maze-dataset warns that a seed overrides its global seed
        cfg = MazeDatasetConfig(name="latent_lookahead", grid_n=grid_n, n_mazes=n,
                                maze_ctor=LatticeMazeGenerators.gen_dfs, seed=seed)
        ds = MazeDataset.from_config(cfg, do_download=False, load_local=False, save_local=False,
                                     do_generate=True, verbose=False, gen_parallel=False)
    return [maze_example(m.connection_list, tuple(m.start_pos), tuple(m.end_pos),
                         [tuple(p) for p in m.solution]) for m in ds]


# ---------------------------------------------------------------- ProsQA-style graphs


def prosqa_problem(rng: np.random.Generator, n_nodes: int, max_parents: int, min_depth: int,
                   max_depth: int) -> tuple[list[int], list[int]]:
    """One ProsQA-style problem (see the module docstring); retries until it is well-posed."""
    if n_nodes > MAX_NODES:
        raise ValueError(f"prosqa n_nodes={n_nodes} exceeds the vocabulary ({MAX_NODES})")
    for _ in range(1000):
        names = rng.permutation(MAX_NODES)[:n_nodes]
        edges = []
        for child in range(2, n_nodes):  # nodes 0 and 1 are the two sources
            k = int(rng.integers(1, max_parents + 1))
            for parent in rng.choice(child, size=min(k, child), replace=False):
                edges.append((int(parent), child))
        children: dict[int, list[int]] = {}
        for p, c in edges:
            children.setdefault(p, []).append(c)
        depth, parent_of = {0: 0}, {}
        queue = deque([0])
        while queue:
            u = queue.popleft()
            for v in sorted(children.get(u, [])):
                if v not in depth:
                    depth[v], parent_of[v] = depth[u] + 1, u
                    queue.append(v)
        targets = [v for v, d in depth.items() if min_depth <= d <= max_depth]
        others = [v for v in range(1, n_nodes) if v not in depth]
        if not targets or not others:
            continue
        target, distractor = int(rng.choice(targets)), int(rng.choice(others))
        path = [target]
        while path[-1] != 0:
            path.append(parent_of[path[-1]])
        path = path[::-1][1:]
        order = rng.permutation(len(edges))
        prompt = [node(int(names[x])) for i in order for x in edges[i]]
        options = [target, distractor] if rng.random() < 0.5 else [distractor, target]
        prompt += [QUERY, node(int(names[0]))] + [node(int(names[o])) for o in options] + [SEP]
        return prompt, [node(int(names[v])) for v in path] + [EOS]
    raise RuntimeError("could not generate a well-posed ProsQA problem; loosen min_depth/max_depth")


def verify_prosqa(prompt: list[int], answer: list[int]) -> bool:
    """True when `answer` is a chain of edges from the entity ending at one of the two options
    (the distractor is unreachable, so a valid chain ends at the right one)."""
    prompt = [t for t in prompt if t != PAD]
    if len(prompt) < 5 or prompt[-5] != QUERY or prompt[-1] != SEP:
        return False
    edge_tokens = prompt[:-5]
    edges = set(zip(edge_tokens[0::2], edge_tokens[1::2], strict=False))
    root, options = prompt[-4], {prompt[-3], prompt[-2]}
    path = []
    for t in answer:
        if t == EOS:
            break
        path.append(t)
    if not path or path[-1] not in options:
        return False
    return all(e in edges for e in zip([root] + path[:-1], path, strict=True))


def generate_prosqa(n: int, n_nodes: int, max_parents: int, min_depth: int, max_depth: int,
                    seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    return [prosqa_problem(rng, n_nodes, max_parents, min_depth, max_depth) for _ in range(n)]


# ---------------------------------------------------------------- datasets


def generate(task: str, cfg: dict) -> list[tuple[list[int], list[int]]]:
    """Examples of `task` from its data config (seeded)."""
    if task == "sudoku4":
        return generate_sudoku(4, cfg["n"], cfg["min_empty"], cfg["max_empty"], cfg["seed"])
    if task == "sudoku4_singles":
        return generate_sudoku(4, cfg["n"], cfg["min_empty"], cfg["max_empty"], cfg["seed"], singles_example)
    if task == "sudoku9":
        return generate_sudoku(9, cfg["n"], cfg["min_empty"], cfg["max_empty"], cfg["seed"])
    if task == "maze":
        return generate_mazes(cfg["grid_n"], cfg["n"], cfg["seed"])
    if task == "prosqa":
        return generate_prosqa(cfg["n"], cfg["n_nodes"], cfg["max_parents"], cfg["min_depth"],
                               cfg["max_depth"], cfg["seed"])
    raise ValueError(f"unknown task {task!r}; choose one of {TASKS}")


def verify(task: str, prompt: list[int], answer: list[int], cfg: dict) -> bool:
    """The task's verifier (see the module docstring)."""
    if task in ("sudoku4", "sudoku9"):
        return verify_sudoku(prompt, answer, 4 if task == "sudoku4" else 9)
    if task == "sudoku4_singles":
        return verify_singles(prompt, answer)
    if task == "maze":
        return verify_maze(prompt, answer, cfg["grid_n"])
    if task == "prosqa":
        return verify_prosqa(prompt, answer)
    raise ValueError(f"unknown task {task!r}; choose one of {TASKS}")


def split_names(n: int, fractions: dict[str, float], seed: int) -> list[str]:
    """A seeded random assignment of n examples to splits with the given fractions."""
    counts = {k: int(round(v * n)) for k, v in fractions.items()}
    last = list(counts)[-1]
    counts[last] = n - sum(v for k, v in counts.items() if k != last)
    names = [k for k, c in counts.items() for _ in range(c)]
    order = np.random.default_rng(seed).permutation(n)
    return [names[i] for i in np.argsort(order)]


def build_dataset(task: str, cfg: dict):
    """A Hugging Face `datasets.Dataset` with columns prompt, answer (token lists) and split."""
    import datasets

    examples = generate(task, cfg)
    splits = split_names(len(examples), cfg["splits"], cfg["seed"])
    return datasets.Dataset.from_dict({"prompt": [p for p, _ in examples],
                                       "answer": [a for _, a in examples], "split": splits})


def to_tensors(ds, split: str) -> tuple:
    """Left-padded prompts (N, P) and right-padded answers (N, A) of one split, as LongTensors
    padded to the lengths of the whole dataset (so every split has the same shapes)."""
    import torch

    all_prompts, all_answers = ds["prompt"], ds["answer"]
    P = max(len(p) for p in all_prompts)
    A = max(len(a) for a in all_answers)
    rows = [i for i, s in enumerate(ds["split"]) if s == split]
    if not rows:
        raise ValueError(f"split {split!r} is empty; check the task's `splits` fractions")
    prompts = torch.full((len(rows), P), PAD, dtype=torch.long)
    answers = torch.full((len(rows), A), PAD, dtype=torch.long)
    for j, i in enumerate(rows):
        p, a = all_prompts[i], all_answers[i]
        prompts[j, P - len(p):] = torch.tensor(p)
        answers[j, :len(a)] = torch.tensor(a)
    return prompts, answers
