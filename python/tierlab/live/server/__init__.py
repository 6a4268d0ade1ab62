"""The live application server: WSGI middleware that gives an application the
paper's soft resources (M worker threads, N DB connections) and profiles every
request, the TPC-W bookstore it serves, and the process that runs both
(`python -m tierlab.live.server.serve`)."""
