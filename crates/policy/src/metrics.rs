//! Load metrics a dispatcher keeps per server, and the message dispatchers exchange.

/// A dispatcher's contribution to the cluster's load metrics, per server. Metrics of
/// several dispatchers add up ([`Metrics::add`]); sliced counters are aligned by the
/// absolute slice index `slice` (⌊t / d⌋), so a late message still lands right.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// Requests in progress.
    pub active: Vec<i64>,
    /// ReDAL: absolute index of the slice `actual` and `expected[0]` belong to.
    pub slice: i64,
    /// ReDAL: requests assigned during slice `slice` (the actual load l).
    pub actual: Vec<i64>,
    /// ReDAL: reservations per slice from `slice` on (`expected[i][server]`).
    pub expected: Vec<Vec<i64>>,
}

impl Metrics {
    /// Add another dispatcher's metrics taken at the same slice.
    pub fn add(&mut self, o: &Metrics) {
        fn add_vec(a: &mut Vec<i64>, b: &[i64]) {
            if a.len() < b.len() {
                a.resize(b.len(), 0);
            }
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        }
        add_vec(&mut self.active, &o.active);
        if o.actual.is_empty() && o.expected.is_empty() {
            return;
        }
        if self.actual.is_empty() && self.expected.is_empty() {
            self.slice = o.slice;
        }
        assert_eq!(self.slice, o.slice, "metrics are added at one slice");
        add_vec(&mut self.actual, &o.actual);
        if self.expected.len() < o.expected.len() {
            self.expected.resize(o.expected.len(), Vec::new());
        }
        self.expected
            .iter_mut()
            .zip(&o.expected)
            .for_each(|(a, b)| add_vec(a, b));
    }

    /// The counter of `server` in absolute slice `slice` (0 if the message has none).
    pub fn expected_at(&self, slice: i64, server: usize) -> i64 {
        usize::try_from(slice - self.slice)
            .ok()
            .and_then(|i| self.expected.get(i))
            .and_then(|row| row.get(server))
            .copied()
            .unwrap_or(0)
    }

    pub fn actual_at(&self, slice: i64, server: usize) -> i64 {
        if slice == self.slice {
            self.actual.get(server).copied().unwrap_or(0)
        } else {
            0
        }
    }
}

/// Requests in progress per server: the ones this dispatcher sent (exact) plus the
/// other dispatchers' as of the last sync.
#[derive(Debug, Clone)]
pub struct Load {
    own: Vec<i64>,
    others: Vec<i64>,
}

impl Load {
    pub fn new(servers: usize) -> Self {
        Load {
            own: vec![0; servers],
            others: vec![0; servers],
        }
    }

    pub fn servers(&self) -> usize {
        self.own.len()
    }

    pub fn sent(&mut self, k: usize) {
        self.own[k] += 1;
    }

    pub fn done(&mut self, k: usize) {
        self.own[k] -= 1;
    }

    pub fn get(&self, k: usize) -> i64 {
        self.own[k] + self.others[k]
    }

    pub fn own(&self) -> &[i64] {
        &self.own
    }

    pub fn sync(&mut self, others: &Metrics) {
        self.others.iter_mut().for_each(|x| *x = 0);
        self.others
            .iter_mut()
            .zip(&others.active)
            .for_each(|(x, y)| *x = *y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_add_up_and_align_by_slice() {
        let a = Metrics {
            active: vec![1, 2],
            slice: 7,
            actual: vec![3, 0],
            expected: vec![vec![1, 0], vec![0, 2]],
        };
        let b = Metrics {
            active: vec![0, 1],
            slice: 7,
            actual: vec![1, 1],
            expected: vec![vec![0, 1]],
        };
        let mut s = Metrics::default();
        s.add(&a);
        s.add(&b);
        assert_eq!(s.active, [1, 3]);
        assert_eq!(s.actual, [4, 1]);
        assert_eq!(s.expected, [vec![1, 1], vec![0, 2]]);
        assert_eq!(s.expected_at(8, 1), 2);
        assert_eq!(s.expected_at(6, 1), 0); // before the message: nothing
        assert_eq!(s.actual_at(8, 0), 0); // the message's actual load is for slice 7 only
    }

    #[test]
    fn actual_load_without_reservations_still_adds_up() {
        let mut s = Metrics::default();
        let a = Metrics {
            slice: 3,
            actual: vec![1, 2],
            ..Default::default()
        };
        s.add(&a);
        s.add(&a);
        assert_eq!((s.slice, s.actual.as_slice()), (3, &[2, 4][..]));
    }

    #[test]
    #[should_panic(expected = "metrics are added at one slice")]
    fn metrics_of_different_slices_are_not_added() {
        let mut s = Metrics {
            slice: 3,
            actual: vec![1],
            ..Default::default()
        };
        s.add(&Metrics {
            slice: 4,
            actual: vec![1],
            ..Default::default()
        });
    }

    #[test]
    fn load_counts_own_plus_synced_others() {
        let mut l = Load::new(2);
        l.sent(0);
        l.sent(0);
        l.done(0);
        l.sync(&Metrics {
            active: vec![0, 5],
            ..Default::default()
        });
        assert_eq!((l.get(0), l.get(1)), (1, 5));
        assert_eq!(
            l.own(),
            [1, 0],
            "only this dispatcher's requests are its own"
        );
    }
}
