"""What the sampling engines share: tokens and word boundaries, draws, the next-token head, attention over a shared
prefix, device copies and forward-pass calls."""
