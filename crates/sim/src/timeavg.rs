//! A piecewise-constant quantity (jobs, busy tokens, queue length) integrated over time,
//! with its maximum, both per monitoring window and over the measured period.

#[derive(Debug, Clone, Default)]
pub struct TimeAvg {
    value: f64,
    last: f64,
    window_area: f64,
    window_max: f64,
    total_area: f64,
    /// Maximum over the measured period's closed windows. Kept per window, not per
    /// change: the window open at the warm-up's end splits its maximum into `before`
    /// (the warm-up's part, for the series only) and `window_max` (the measured part).
    total_max: f64,
    before: f64,
}

impl TimeAvg {
    #[inline]
    pub fn set(&mut self, now: f64, value: f64) {
        let area = self.value * (now - self.last);
        self.window_area += area;
        self.total_area += area;
        self.last = now;
        self.value = value;
        // (Not `f64::max`: see `max`.)
        if value > self.window_max {
            self.window_max = value;
        }
    }

    pub fn value(&self) -> f64 {
        self.value
    }

    #[inline]
    pub fn add(&mut self, now: f64, delta: f64) {
        self.set(now, self.value + delta);
    }

    /// (time average, maximum) over the window ending now; starts the next window.
    pub fn close_window(&mut self, now: f64, length: f64) -> (f64, f64) {
        self.set(now, self.value);
        let out = (self.window_area / length, max(self.window_max, self.before));
        self.total_max = max(self.total_max, self.window_max);
        self.window_area = 0.0;
        self.window_max = self.value;
        self.before = 0.0;
        out
    }

    /// Forget the warm-up: the measured period starts now.
    pub fn start_measuring(&mut self, now: f64) {
        self.set(now, self.value);
        self.total_area = 0.0;
        self.before = self.window_max;
        self.window_max = self.value;
        self.total_max = self.value;
    }

    /// Integral over the measured period, up to now.
    pub fn total_area(&mut self, now: f64) -> f64 {
        self.set(now, self.value);
        self.total_area
    }

    /// Maximum over the measured period, up to now.
    pub fn total_max(&self) -> f64 {
        max(self.total_max, self.window_max)
    }
}

/// Not `f64::max`: its NaN handling costs 7 instructions, and a level is never NaN
/// (nor -0.0), so a plain comparison gives the same maximum.
#[inline]
fn max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrates_piecewise_constant_values() {
        let mut a = TimeAvg::default();
        a.set(1.0, 2.0); // 0 on [0,1)
        a.set(3.0, 1.0); // 2 on [1,3)
        let (mean, max) = a.close_window(4.0, 4.0); // 1 on [3,4)
        assert_eq!((mean, max), ((0.0 + 4.0 + 1.0) / 4.0, 2.0));
        assert_eq!(a.total_area(5.0), 6.0);
        assert_eq!(a.total_max(), 2.0);
    }

    #[test]
    fn the_measured_maximum_forgets_the_warm_up() {
        let mut a = TimeAvg::default();
        a.set(0.0, 5.0);
        a.set(1.0, 3.0);
        a.start_measuring(2.0);
        assert_eq!(a.total_max(), 3.0, "the level at the start counts");
        a.set(3.0, 4.0);
        a.set(4.0, 1.0);
        assert_eq!(a.total_max(), 4.0);
        assert_eq!(
            a.close_window(5.0, 5.0).1,
            5.0,
            "the window's maximum is unchanged"
        );
    }
}
