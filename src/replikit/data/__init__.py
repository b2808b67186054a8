"""Data: the dataset registry (`datasets`), preparation and verified offline copies (`prepare`),
augmentation on tensors (`augment`), and generated tasks (`tasks/`: continual-learning streams,
planning puzzles).

May import: `replikit.core`."""
