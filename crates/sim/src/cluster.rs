//! Dispatch points: how a request reaches one server of a tier. Each tier has K
//! dispatchers running one policy (crates/policy); sessions have a home server on
//! stateful tiers, and a request served away from it migrates the session there.

use std::collections::VecDeque;

use policy::{Dispatch, Metrics, Policy, WaitQueue};
use trace::summary::{mean, DispatchSummary};

use crate::model::Tier;

pub(crate) struct Cluster {
    pub(crate) dispatchers: Vec<Box<dyn Dispatch>>,
    /// Servers (tier-local indices) each dispatcher may use.
    pub(crate) blocks: Vec<std::ops::Range<usize>>,
    pub(crate) queues: Vec<WaitQueue<u32>>,
    /// Metrics in flight to each dispatcher (summed over the others), oldest first.
    pub(crate) in_flight: VecDeque<Vec<Metrics>>,
    pub(crate) shares: bool,
    /// One server behind one round-robin dispatcher (every tier without a `dispatch`
    /// section): nothing to decide, so requests go straight to it without asking the
    /// policy (-8% of an M/M/8 model's instructions, -6% of a nested one), with the
    /// same results.
    pub(crate) single: bool,
    /// Metric exchanges so far: round k happens at k × the sync interval (a sum of
    /// intervals would drift, and a round at the start of measuring go uncounted).
    pub(crate) rounds: u64,
    // counted while measuring
    pub(crate) migrations: u64,
    pub(crate) created: u64,
    pub(crate) queued: u64,
    pub(crate) queue_full: u64,
    pub(crate) queue_timeouts: u64,
    pub(crate) syncs: u64,
    pub(crate) sync_bytes: u64,
}

impl Cluster {
    pub(crate) fn new(t: &Tier, seed: u64) -> Result<Cluster, String> {
        let d = &t.dispatch;
        let blocks = t.blocks();
        let single = blocks.len() == 1
            && blocks[0].len() == 1
            && matches!(d.policy, Policy::RoundRobin { .. });
        let peers = if d.hierarchical { 0 } else { d.dispatchers - 1 };
        let dispatchers = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| {
                d.policy.build(
                    b.len(),
                    peers,
                    seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                )
            })
            .collect::<Result<_, _>>()
            .map_err(|e| format!("tier {}: {e}", t.name))?;
        Ok(Cluster {
            dispatchers,
            blocks,
            queues: (0..d.dispatchers)
                .map(|_| WaitQueue::new(d.queue, d.queue_timeout))
                .collect(),
            in_flight: VecDeque::new(),
            shares: peers > 0 && d.policy.shares_metrics(),
            single,
            rounds: 0,
            migrations: 0,
            created: 0,
            queued: 0,
            queue_full: 0,
            queue_timeouts: 0,
            syncs: 0,
            sync_bytes: 0,
        })
    }

    pub(crate) fn shares(&self) -> bool {
        self.shares
    }

    /// Whether the sessions' homes on this tier are ever read: on a stateful tier, or
    /// by a dispatcher with a choice (affinity).
    pub(crate) fn reads_homes(&self, stateful: bool) -> bool {
        stateful || !self.single
    }

    pub(crate) fn summary(&self) -> DispatchSummary {
        DispatchSummary {
            dispatchers: self.dispatchers.len() as u64,
            session_migrations: self.migrations,
            sessions_created: self.created,
            queued: self.queued,
            rejected_queue_full: self.queue_full,
            rejected_queue_timeout: self.queue_timeouts,
            sync_messages: self.syncs,
            sync_payload_bytes: mean(self.sync_bytes as f64, self.syncs),
        }
    }
}
