//! Independent random streams, one per purpose, so that changing how often one
//! purpose draws (say, a new think-time distribution) leaves the others unchanged.

use std::convert::Infallible;

use rand::SeedableRng;
use rand::TryRng;
use rand_pcg::Pcg64Mcg;

#[derive(Clone, Copy)]
pub enum Stream {
    Arrivals = 0,
    Think = 1,
    Navigation = 2,
    Demand = 3,
    Session = 4,
    Network = 5,
}

/// One purpose's generator, seeded (and its seed derived) at its first draw: every
/// session has streams of its own, and most sessions draw from two of them or none.
pub struct Generator {
    streams_seed: u64,
    stream: u8,
    pcg: Option<Pcg64Mcg>,
}

impl Generator {
    #[inline]
    fn pcg(&mut self) -> &mut Pcg64Mcg {
        let (seed, stream) = (self.streams_seed, self.stream);
        self.pcg.get_or_insert_with(|| first_draw(seed, stream))
    }
}

#[cold]
fn first_draw(streams_seed: u64, stream: u8) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(splitmix(streams_seed, u64::from(stream)))
}

impl TryRng for Generator {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        self.pcg().try_next_u32()
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.pcg().try_next_u64()
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.pcg().try_fill_bytes(dst)
    }
}

pub struct Streams([Generator; 6]);

impl Streams {
    pub fn new(seed: u64) -> Self {
        Streams(std::array::from_fn(|i| Generator {
            streams_seed: seed,
            stream: i as u8,
            pcg: None,
        }))
    }

    /// Start over from `seed`, in place (a session's slot is reused for the next).
    pub fn reseed(&mut self, seed: u64) {
        for g in &mut self.0 {
            g.streams_seed = seed;
            g.pcg = None;
        }
    }

    #[inline]
    pub fn get(&mut self, s: Stream) -> &mut Generator {
        &mut self.0[s as usize]
    }
}

impl Default for Streams {
    fn default() -> Self {
        Streams::new(0)
    }
}

/// The seeds of a run's sessions' streams, used alike by the load generator and the
/// simulator, so that one seed gives the same walks and think times live and
/// simulated, whatever the order in which the sessions' requests finish: a closed
/// population's client `i` (from 0) keeps its streams across its sessions; an open
/// population's `n`-th session (from 1) has its own. The run's own streams
/// (`Streams::new(seed)`) draw the session arrivals.
pub fn client_seed(seed: u64, i: u64) -> u64 {
    splitmix(seed, i)
}

pub fn session_seed(seed: u64, n: u64) -> u64 {
    splitmix(seed, (1 << 40) + n)
}

/// The burst phases' switches: streams of their own, so that they are not tied to the
/// arrivals.
pub fn burst_streams(seed: u64) -> Streams {
    Streams::new(splitmix(seed, 1 << 41))
}

/// SplitMix64 of (seed, stream): decorrelated seeds for the per-purpose generators
/// (and for the sessions' and the burst phases' streams).
pub fn splitmix(seed: u64, stream: u64) -> u64 {
    let mut z = seed
        ^ stream
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x6A09_E667_F3BC_C909);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn a_stream_seeded_at_its_first_draw_draws_as_if_seeded_at_once() {
        let mut lazy = Streams::new(7);
        let _ = lazy.get(Stream::Demand); // a borrow is not a draw
        let _: f64 = lazy.get(Stream::Think).random();
        let mut eager = Pcg64Mcg::seed_from_u64(splitmix(7, Stream::Demand as u64));
        for _ in 0..3 {
            assert_eq!(
                lazy.get(Stream::Demand).random::<u64>(),
                eager.random::<u64>()
            );
        }
    }
}
