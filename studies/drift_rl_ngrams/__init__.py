"""Does the paper's steering trainer get the drift family's margin when the steerer's n-gram table is not trained?"""
