"""Running attention-viz as identical replicas behind nginx (see README.md in this folder)."""
