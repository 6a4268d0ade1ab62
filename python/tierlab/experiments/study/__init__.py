"""What the paper reproductions (studies/) and the investigations (investigations/) share:
their command line and provenance (`provenance`), the claims ledger (`claims`) and the
rounding of a computed figure before it becomes a run's input (`inputs`). The scripts
stay in the repository and import these; nothing here knows a study by name."""
