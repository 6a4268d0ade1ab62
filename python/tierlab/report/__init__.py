"""What a person reads: terminal tables and figures."""
