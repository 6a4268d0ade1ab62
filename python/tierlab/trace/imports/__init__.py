"""Results of other load tools as client-only traces of the one schema
(docs/trace.md, `source` "import"): JMeter and k6 keep one record per request; Locust
and HdrHistogram logs keep distributions only. `missing` in each summary says what the
tool did not measure."""
