"""Where the paper's steering trainer loses the margin on sim:drift1, component by component (dev)."""
