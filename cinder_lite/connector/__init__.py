"""Compute-side tools: this host's connector and a client that attaches
and detaches volumes over REST or the message bus."""
