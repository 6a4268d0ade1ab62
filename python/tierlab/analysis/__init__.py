"""What a trace says — any trace, simulated or live: the request profile, the
bottleneck, response-time fluctuations, a load curve's knee, the contention cost fit,
what a dispatch policy did to a cluster."""
