"""Training and teams: Kueue team queues and JobSet, each team's access, admission, network and data."""
