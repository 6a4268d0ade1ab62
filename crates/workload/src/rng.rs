//! Independent random streams, one per purpose, so that changing how often one
//! purpose draws (say, a new think-time distribution) leaves the others unchanged.

use rand::SeedableRng;
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

pub struct Streams([Pcg64Mcg; 6]);

impl Streams {
    pub fn new(seed: u64) -> Self {
        Streams(std::array::from_fn(|i| {
            Pcg64Mcg::seed_from_u64(splitmix(seed, i as u64))
        }))
    }

    #[inline]
    pub fn get(&mut self, s: Stream) -> &mut Pcg64Mcg {
        &mut self.0[s as usize]
    }
}

/// SplitMix64 of (seed, stream): decorrelated seeds for the per-purpose generators
/// (and for the load generator's per-client streams).
pub fn splitmix(seed: u64, stream: u64) -> u64 {
    let mut z = seed
        ^ stream
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x6A09_E667_F3BC_C909);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
