"""Many runs and their analyses: load ramps and their knee, pool sizing (profiling
grid, the method, validation), the contention cost table."""
