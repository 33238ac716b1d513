//! The proxy's job slots, shared fairly between its clients.
//!
//! A job (and a question about the export, and a sending of files) holds a slot while it runs:
//! at most `max` at once, and at most `per_client` of one client's. A request that finds no slot
//! for it waits in line, for a bounded time; a freed slot goes to the waiting client that holds
//! the fewest, the longest waiting among equals. So a client that asks again the moment its own
//! job ends cannot take the slot from one that has been waiting, and a client with many requests
//! in line cannot crowd out one with a single request. A request still waiting when its time is
//! up is answered "busy", and its client runs the command itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

/// Requests of one client that may wait in line at once; another is answered "busy" at once.
/// Each holds its request (up to [`super::protocol::MAX_LINE`] bytes) while it waits, so this
/// bounds what one client's waiting requests make the proxy hold.
pub const WAITING_PER_CLIENT: usize = 8;

#[derive(Debug)]
pub struct JobSlots {
    max: usize,
    per_client: usize,
    state: Mutex<State>,
    /// Slots held, watched by a shutdown that waits for the last job.
    held_total: watch::Sender<usize>,
}

#[derive(Debug, Default)]
struct State {
    held: HashMap<String, usize>,
    total: usize,
    waiting: Vec<Waiter>,
    next_ticket: u64,
    /// Set by a shutdown: no slot is given any more.
    closed: bool,
}

#[derive(Debug)]
struct Waiter {
    client: String,
    /// Order of arrival, for first come among clients holding as many.
    ticket: u64,
    reply: oneshot::Sender<JobSlot>,
}

/// A slot held by one client's job; given back (and handed to whoever waits) when dropped.
#[derive(Debug)]
pub struct JobSlot {
    slots: Arc<JobSlots>,
    client: String,
}

/// Slots handed to waiters, sent once the lock is released (a slot a waiter no longer wants is
/// dropped there, which takes the lock again to pass it on).
type Grants = Vec<(oneshot::Sender<JobSlot>, JobSlot)>;

impl JobSlots {
    pub fn new(max: usize, per_client: usize) -> Arc<JobSlots> {
        Arc::new(JobSlots {
            max: max.max(1),
            per_client: per_client.max(1),
            state: Mutex::default(),
            held_total: watch::channel(0).0,
        })
    }

    /// A slot for a job of `client`, waiting up to `wait` for one; `None` when none came in
    /// time (or the proxy is shutting down).
    pub async fn take(self: &Arc<Self>, client: &str, wait: Duration) -> Option<JobSlot> {
        let (reply, mut given) = oneshot::channel();
        let ticket = {
            let mut state = self.lock();
            let waiting = state.waiting.iter().filter(|w| w.client == client).count();
            if state.closed || waiting >= WAITING_PER_CLIENT {
                return None;
            }
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            state.waiting.push(Waiter { client: client.to_string(), ticket, reply });
            let grants = self.hand_out(&mut state);
            drop(state);
            deliver(grants);
            ticket
        };
        let place = PlaceInLine { slots: self, ticket };
        match tokio::time::timeout(wait, &mut given).await {
            Ok(Ok(slot)) => Some(slot),
            // Time is up, or a shutdown dropped the line.
            Ok(Err(_)) | Err(_) => {
                drop(place);
                // A slot handed over just as the time ran out is still this request's.
                given.try_recv().ok()
            }
        }
    }

    /// Gives no slot any more (waiters are let go) and waits up to `within` until every held one
    /// is given back; false if some were still held.
    pub async fn close_and_drain(&self, within: Duration) -> bool {
        let waiting = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.waiting)
        };
        drop(waiting);
        let mut held = self.held_total.subscribe();
        tokio::time::timeout(within, held.wait_for(|n| *n == 0)).await.is_ok()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Free slots to waiters under their share: each to the one holding fewest, first come among
    /// equals.
    fn hand_out(self: &Arc<Self>, state: &mut State) -> Grants {
        let mut grants = Vec::new();
        while !state.closed && state.total < self.max {
            let holds = |client: &str| state.held.get(client).copied().unwrap_or(0);
            let next = (0..state.waiting.len())
                .filter(|&i| holds(&state.waiting[i].client) < self.per_client)
                .min_by_key(|&i| (holds(&state.waiting[i].client), state.waiting[i].ticket));
            let Some(next) = next else { break };
            let waiter = state.waiting.remove(next);
            *state.held.entry(waiter.client.clone()).or_default() += 1;
            state.total += 1;
            grants.push((waiter.reply, JobSlot { slots: self.clone(), client: waiter.client }));
        }
        self.held_total.send_replace(state.total);
        grants
    }
}

/// A request's place in line, left when its wait ends, however it ends (a task cancelled
/// while it waits leaves no place behind).
struct PlaceInLine<'a> {
    slots: &'a JobSlots,
    ticket: u64,
}

impl Drop for PlaceInLine<'_> {
    fn drop(&mut self) {
        self.slots.lock().waiting.retain(|w| w.ticket != self.ticket);
    }
}

fn deliver(grants: Grants) {
    for (reply, slot) in grants {
        // A waiter whose time ran out meanwhile: the slot, dropped, goes to the next.
        let _ = reply.send(slot);
    }
}

impl Drop for JobSlot {
    fn drop(&mut self) {
        let slots = self.slots.clone();
        let mut state = slots.lock();
        if let Some(count) = state.held.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                state.held.remove(&self.client);
            }
        }
        state.total -= 1;
        let grants = slots.hand_out(&mut state);
        drop(state);
        deliver(grants);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(10);

    /// A request of `client`'s for a slot, returned once it waits in line.
    async fn in_line(slots: &Arc<JobSlots>, client: &'static str) -> tokio::task::JoinHandle<Option<JobSlot>> {
        let waiting = || slots.lock().waiting.iter().filter(|w| w.client == client).count();
        let before = waiting();
        let request = tokio::spawn({
            let slots = slots.clone();
            async move { slots.take(client, LONG).await }
        });
        while waiting() == before {
            tokio::task::yield_now().await;
        }
        request
    }

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_waiting_client_that_holds_fewest() {
        let slots = JobSlots::new(2, 2);
        let a1 = slots.take("a", LONG).await.unwrap();
        let _a2 = slots.take("a", LONG).await.unwrap();
        // a asks first for a third, then b for its first: both wait.
        let a3 = in_line(&slots, "a").await;
        let b1 = in_line(&slots, "b").await;
        drop(a1);
        let b1 = b1.await.unwrap().expect("b holds none, so the freed slot is b's");
        assert!(!a3.is_finished(), "a, which came first but holds one, still waits");
        drop(b1);
        assert!(a3.await.unwrap().is_some(), "then a gets it");
    }

    #[tokio::test]
    async fn a_client_waits_for_its_own_share_while_others_are_served() {
        let slots = JobSlots::new(3, 1);
        let a1 = slots.take("a", LONG).await.unwrap();
        let a2 = in_line(&slots, "a").await;
        assert!(slots.take("b", LONG).await.is_some(), "b is served past a's waiting request");
        drop(a1);
        assert!(a2.await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_request_not_served_in_time_is_let_go_and_its_place_passes_on() {
        let slots = JobSlots::new(1, 1);
        let a = slots.take("a", LONG).await.unwrap();
        assert!(slots.take("b", Duration::from_millis(20)).await.is_none(), "busy");
        assert!(slots.lock().waiting.is_empty(), "b's request left the line");
        let c = in_line(&slots, "c").await;
        drop(a);
        assert!(c.await.unwrap().is_some());
        assert_eq!(slots.lock().total, 0, "c's slot was given back as its task ended");
    }

    #[tokio::test]
    async fn a_client_may_have_only_so_many_requests_in_line_and_given_up_ones_leave_it() {
        let slots = JobSlots::new(1, 1);
        let _held = slots.take("a", LONG).await.unwrap();
        let mut line = tokio::task::JoinSet::new();
        for _ in 0..WAITING_PER_CLIENT {
            let slots = slots.clone();
            line.spawn(async move { slots.take("b", LONG).await.is_some() });
        }
        while slots.lock().waiting.len() < WAITING_PER_CLIENT {
            tokio::task::yield_now().await;
        }
        assert!(slots.take("b", LONG).await.is_none(), "one more of b's is answered at once");
        let c = in_line(&slots, "c").await;
        assert_eq!(slots.lock().waiting.len(), WAITING_PER_CLIENT + 1, "another client still joins the line");
        c.abort();
        line.abort_all();
        while !line.is_empty() {
            line.join_next().await;
        }
        let _ = c.await;
        assert!(slots.lock().waiting.is_empty(), "requests given up leave the line");
    }

    #[tokio::test]
    async fn a_shutdown_lets_waiters_go_and_waits_for_the_held_slots() {
        let slots = JobSlots::new(1, 1);
        let held = slots.take("a", LONG).await.unwrap();
        let waiting = in_line(&slots, "b").await;
        assert!(!slots.close_and_drain(Duration::from_millis(20)).await, "a slot is still held");
        assert!(waiting.await.unwrap().is_none(), "the waiter was let go");
        assert!(slots.take("c", LONG).await.is_none(), "no slot after a shutdown began");
        drop(held);
        assert!(slots.close_and_drain(Duration::from_millis(20)).await);
    }
}
