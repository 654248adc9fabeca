"""One module per challenge. A module declares Evaluation subclasses with a `name`; the
command line finds them here (evaluation.framework.available_challenges)."""
