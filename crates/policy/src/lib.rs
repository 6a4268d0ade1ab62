//! Dispatch policies, written once against no particular clock: the simulator calls
//! them in virtual time and the live proxy in real time.

/// Chooses the server of a tier that receives the next request.
pub trait Dispatch {
    fn pick(&mut self) -> usize;
}

/// Smooth weighted round robin (the nginx algorithm): with equal weights the plain
/// cycle 0, 1, …, n−1; with weights, each server's share equals its weight's share and
/// its turns are spread out rather than bunched.
pub struct RoundRobin {
    weights: Vec<i64>,
    current: Vec<i64>,
    total: i64,
}

impl RoundRobin {
    /// `weights` must be non-empty with a positive sum.
    pub fn new(weights: &[u32]) -> Self {
        let weights: Vec<i64> = weights.iter().map(|w| *w as i64).collect();
        let total = weights.iter().sum();
        assert!(total > 0, "round robin needs a positive total weight");
        RoundRobin {
            current: vec![0; weights.len()],
            weights,
            total,
        }
    }

    pub fn equal(servers: usize) -> Self {
        Self::new(&vec![1; servers])
    }
}

impl Dispatch for RoundRobin {
    fn pick(&mut self) -> usize {
        let mut best = 0;
        for i in 0..self.weights.len() {
            self.current[i] += self.weights[i];
            if self.current[i] > self.current[best] {
                best = i;
            }
        }
        self.current[best] -= self.total;
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_weights_cycle_in_order() {
        let mut rr = RoundRobin::equal(3);
        let picks: Vec<_> = (0..6).map(|_| rr.pick()).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn weights_give_proportional_and_spread_shares() {
        let mut rr = RoundRobin::new(&[5, 1, 1]);
        let picks: Vec<_> = (0..7).map(|_| rr.pick()).collect();
        assert_eq!(picks, [0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn zero_weight_server_never_chosen() {
        let mut rr = RoundRobin::new(&[1, 0]);
        assert!((0..10).all(|_| rr.pick() == 0));
    }
}
