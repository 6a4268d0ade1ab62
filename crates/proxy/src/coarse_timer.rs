//! A coarse timer for hyper's header-read timeout (`hyper::rt::Timer`): deadlines are
//! checked by one task every `resolution`, not registered with tokio's timer wheel.
//! hyper re-arms that timeout for every request; with tokio's timer each re-arm
//! registered an entry and woke the current-thread driver through its eventfd — one
//! extra syscall per request, ≈ 1 µs of CPU (perf, strace). A timeout that fires up to
//! `resolution` late is fine for closing a trickling client.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Slots {
    entries: Vec<Option<Entry>>,
    free: Vec<usize>,
}

struct Entry {
    deadline: Instant,
    waker: Option<Waker>,
}

#[derive(Clone)]
pub struct CoarseTimer {
    slots: Arc<Mutex<Slots>>,
}

impl CoarseTimer {
    /// A timer whose sleeps are woken by a task (spawned here, on the current tokio
    /// runtime) every `resolution`; it ends when the last clone of the timer goes.
    pub fn start(resolution: Duration) -> CoarseTimer {
        let timer = CoarseTimer {
            slots: Arc::default(),
        };
        let weak = Arc::downgrade(&timer.slots);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(resolution);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(slots) = weak.upgrade() else {
                    return;
                };
                let now = Instant::now();
                let mut s = slots.lock().unwrap_or_else(|e| e.into_inner());
                for e in s.entries.iter_mut().flatten() {
                    if e.deadline <= now {
                        if let Some(w) = e.waker.take() {
                            w.wake();
                        }
                    }
                }
            }
        });
        timer
    }
}

pub struct CoarseSleep {
    slots: Arc<Mutex<Slots>>,
    slot: usize,
    deadline: Instant,
}

impl Future for CoarseSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = s.entries[self.slot].as_mut() {
            e.deadline = self.deadline;
            if !e.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                e.waker = Some(cx.waker().clone());
            }
        }
        Poll::Pending
    }
}

impl Drop for CoarseSleep {
    fn drop(&mut self) {
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        s.entries[self.slot] = None;
        s.free.push(self.slot);
    }
}

impl hyper::rt::Sleep for CoarseSleep {}

impl hyper::rt::Timer for CoarseTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(Instant::now() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let entry = Some(Entry {
            deadline,
            waker: None,
        });
        let slot = match s.free.pop() {
            Some(i) => {
                s.entries[i] = entry;
                i
            }
            None => {
                s.entries.push(entry);
                s.entries.len() - 1
            }
        };
        Box::pin(CoarseSleep {
            slots: Arc::clone(&self.slots),
            slot,
            deadline,
        })
    }

    /// In place: the next poll records the new deadline (a wake-up for the old, earlier
    /// one finds it not yet due and waits again).
    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<CoarseSleep>() {
            Some(mut s) => s.deadline = new_deadline,
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Timer;

    #[tokio::test]
    async fn sleeps_end_after_their_deadline_and_reset_moves_it() {
        let t = CoarseTimer::start(Duration::from_millis(5));
        let start = Instant::now();
        t.sleep(Duration::from_millis(20)).await;
        assert!(start.elapsed() >= Duration::from_millis(20));
        let mut s = t.sleep(Duration::from_millis(10));
        t.reset(&mut s, Instant::now() + Duration::from_millis(40));
        let start = Instant::now();
        s.await;
        assert!(start.elapsed() >= Duration::from_millis(40));
        // Slots are reused once their sleeps are gone.
        drop(t.sleep(Duration::from_secs(1)));
        assert_eq!(t.slots.lock().unwrap().entries.len(), 1);
    }
}
