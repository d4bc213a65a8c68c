"""The learned addressee and seat models: the turns they read, the cues and features of a
turn, the models and their shipped weights (``addressee.npz``, ``seat.npz``), and the
features' names in words for traces."""
