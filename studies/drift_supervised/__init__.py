"""Can the paper's steerer architecture reach the learnable ceiling on ``sim:drift1`` when its labels are supervised?"""
