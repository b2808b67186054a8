"""Tasks shared by papers: continual-learning streams (`streams`) and planning puzzles (`planning`)."""
