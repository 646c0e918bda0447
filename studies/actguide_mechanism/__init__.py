"""What does ACTGUIDE-RL's update do with the guided groups on the skill barrier, iteration by iteration?"""
