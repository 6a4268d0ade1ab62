//! The workload of a tierlab model, written once for both of its executions: the
//! simulator (virtual time) and the live load generator (real time). Sessions walk a
//! Markov chain of request types ([`walk`]) with think times drawn from
//! [`dist::Dist`], under an optional two-phase burst modulation ([`burst`]), each
//! purpose drawing from its own random stream ([`rng`]).

pub mod burst;
pub mod dist;
pub mod rng;
pub mod spec;
pub mod walk;
