"""How well the answerability reader ranks retrieved passages (ROC AUC on a held-out split): :mod:`.run`."""
