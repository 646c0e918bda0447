"""How far does a rule written from the drift family's card get, between the best fixed rule and the ceiling?"""
