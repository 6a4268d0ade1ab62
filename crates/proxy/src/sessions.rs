//! What the proxy remembers per session: its home server (what affinity follows in
//! `follow` mode) and when its previous request came (ReDAL's think-time estimate).

use std::collections::HashMap;

#[derive(Debug, Clone, Copy)]
struct Entry {
    home: usize,
    last: f64,
}

/// Sessions idle longer than `idle` seconds are forgotten, amortized: when the table has
/// doubled since the last pass (as the policy crate prunes its reservations).
pub struct Sessions {
    map: HashMap<u64, Entry>,
    idle: f64,
    pruned_at: usize,
}

impl Sessions {
    pub fn new(idle: f64) -> Self {
        Sessions {
            map: HashMap::new(),
            idle,
            pruned_at: 0,
        }
    }

    /// The session's remembered home and the seconds since its previous request.
    pub fn get(&self, session: u64, now: f64) -> (Option<usize>, Option<f64>) {
        match self.map.get(&session) {
            Some(e) if now - e.last <= self.idle => (Some(e.home), Some(now - e.last)),
            _ => (None, None),
        }
    }

    /// Forget every session (a new measured run starts with none, as a simulation does).
    pub fn clear(&mut self) {
        self.map.clear();
        self.pruned_at = 0;
    }

    pub fn set(&mut self, session: u64, home: usize, now: f64) {
        self.map.insert(session, Entry { home, last: now });
        if self.map.len() > 2 * self.pruned_at + 1024 {
            let idle = self.idle;
            self.map.retain(|_, e| now - e.last <= idle);
            self.pruned_at = self.map.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_home_and_gap_until_idle() {
        let mut s = Sessions::new(10.0);
        assert_eq!(s.get(1, 0.0), (None, None));
        s.set(1, 2, 1.0);
        assert_eq!(s.get(1, 3.5), (Some(2), Some(2.5)));
        assert_eq!(s.get(1, 12.0), (None, None));
        s.set(1, 2, 13.0);
        s.clear();
        assert_eq!(s.get(1, 13.0), (None, None));
    }
}
