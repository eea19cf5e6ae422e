"""Multiple-choice scoring methods and what they share."""
