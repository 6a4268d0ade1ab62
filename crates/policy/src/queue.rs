//! The bounded, timed queue a waiting dispatcher (ReDAL-W) holds requests in.

use std::collections::VecDeque;

/// FIFO with a capacity and one timeout for all: a push beyond capacity is refused
/// (the caller rejects the request, counted), and `expire` hands back every item whose
/// wait reached the timeout. Deadlines grow in push order, so expiry is from the front.
#[derive(Debug)]
pub struct WaitQueue<T> {
    items: VecDeque<(T, f64)>,
    capacity: usize,
    timeout: f64,
}

impl<T> WaitQueue<T> {
    pub fn new(capacity: usize, timeout: f64) -> Self {
        WaitQueue {
            items: VecDeque::new(),
            capacity,
            timeout,
        }
    }

    /// Queue `item`; its deadline, or the item back if the queue is full.
    pub fn push(&mut self, now: f64, item: T) -> Result<f64, T> {
        if self.items.len() >= self.capacity {
            return Err(item);
        }
        let deadline = now + self.timeout;
        self.items.push_back((item, deadline));
        Ok(deadline)
    }

    /// Remove and return the items whose deadline is ≤ `now`.
    pub fn expire(&mut self, now: f64) -> Vec<T> {
        let n = self.items.iter().take_while(|(_, d)| *d <= now).count();
        self.items.drain(..n).map(|(t, _)| t).collect()
    }

    /// Keep only the items `keep` accepts, in order (a client that left while queued
    /// leaves the queue); returns how many were removed.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) -> usize {
        let before = self.items.len();
        self.items.retain(|(t, _)| keep(t));
        before - self.items.len()
    }

    pub fn front(&self) -> Option<&T> {
        self.items.front().map(|(t, _)| t)
    }

    pub fn pop_front(&mut self) -> Option<T> {
        self.items.pop_front().map(|(t, _)| t)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_fifo_with_timeout() {
        let mut q = WaitQueue::new(2, 1.0);
        assert_eq!(q.push(0.0, 'a'), Ok(1.0));
        assert_eq!(q.push(0.5, 'b'), Ok(1.5));
        assert_eq!(q.push(0.6, 'c'), Err('c')); // full: refused, not dropped
        assert_eq!((q.front(), q.len(), q.is_empty()), (Some(&'a'), 2, false));
        assert_eq!(q.expire(0.99), Vec::<char>::new());
        assert_eq!(q.expire(1.2), vec!['a']);
        assert_eq!(q.push(1.2, 'd'), Ok(2.2));
        assert_eq!(q.pop_front(), Some('b'));
        assert_eq!(q.expire(3.0), vec!['d']);
        assert!(q.is_empty());
        q.push(4.0, 'e').unwrap();
        q.push(4.1, 'f').unwrap();
        assert_eq!(q.retain(|c| *c != 'e'), 1);
        assert_eq!(q.expire(5.1), vec!['f']); // deadlines stay in order
    }
}
