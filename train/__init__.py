"""Training, evaluation (tournaments) and export of Arschloch bots."""
