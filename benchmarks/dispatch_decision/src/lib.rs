//! Benchmarks only: see benches/decide.rs.
