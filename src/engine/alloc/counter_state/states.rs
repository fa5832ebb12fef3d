//! The counter states of one client, created on first use and pruned when idle.

use super::*;
use crate::engine::panic_safety::lock;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use crate::engine::alloc::live::LiveGroup;

/// How many counter states a client keeps before it drops idle ones.
pub const IDLE_STATES_KEPT: usize = 1024;

/// The counter states of one client, keyed by database and counter, each kept with a
/// note `N` made when it is created (for a client: the naming that created it, which the
/// fence of a located counter compares), outside the key that every call looks up.
pub struct CounterStates<K, N = ()> {
    states: Mutex<Kept<K, N>>,
    group: LiveGroup,
}

/// The kept states with their notes, and the number of them that makes the next new one
/// prune.
struct Kept<K, N> {
    map: HashMap<K, (N, Arc<CounterState>)>,
    prune_at: usize,
}

impl<K, N> Default for CounterStates<K, N> {
    fn default() -> Self {
        CounterStates {
            states: Mutex::new(Kept {
                map: HashMap::new(),
                prune_at: IDLE_STATES_KEPT,
            }),
            group: LiveGroup::default(),
        }
    }
}

/// Whether the kept state `state` is in use: held by a caller, or with work in flight.
/// A state that is not can be dropped at any time: nothing can reach it any more but
/// the map (whose lock the caller holds), so no second state of its counter is ever
/// live at the same time as it.
fn held_or_working(state: &Arc<CounterState>) -> bool {
    Arc::strong_count(state) > 1 || state.in_use()
}

impl<K: Eq + Hash + Clone> CounterStates<K> {
    /// The state of `key`, created on first use ([`CounterStates::get_noted`]), for
    /// states kept without a note.
    #[cfg(test)]
    pub fn get(&self, key: &K) -> Arc<CounterState> {
        self.get_noted(key, || ())
    }
}

impl<K: Eq + Hash + Clone, N> CounterStates<K, N> {
    /// The state of `key`, created on first use, noted with what `note` makes then. Past
    /// [`IDLE_STATES_KEPT`] states (or twice as many as were in use at the last pruning),
    /// the states not in use are dropped, those holding cached values last (their values
    /// become a gap, never a duplicate), so that per-tenant or per-day names do not grow
    /// memory.
    pub fn get_noted(&self, key: &K, note: impl FnOnce() -> N) -> Arc<CounterState> {
        let mut kept = lock(&self.states);
        if let Some((_, state)) = kept.map.get(key) {
            return state.clone();
        }
        if kept.map.len() >= kept.prune_at {
            kept.map
                .retain(|_, (_, state)| held_or_working(state) || state.holds_values());
            if kept.map.len() >= IDLE_STATES_KEPT {
                kept.map.retain(|_, (_, state)| held_or_working(state));
            }
            kept.prune_at = IDLE_STATES_KEPT.max(2 * kept.map.len());
        }
        kept.map
            .entry(key.clone())
            .or_insert_with(|| (note(), Arc::new(CounterState::in_group(&self.group))))
            .1
            .clone()
    }

    /// The kept states whose key `select` picks.
    pub fn select(&self, select: impl Fn(&K) -> bool) -> Vec<Arc<CounterState>> {
        self.select_noted(|key, _| select(key))
    }

    /// The kept states whose key and note `select` picks.
    pub fn select_noted(&self, select: impl Fn(&K, &N) -> bool) -> Vec<Arc<CounterState>> {
        lock(&self.states)
            .map
            .iter()
            .filter(|(key, (note, _))| select(key, note))
            .map(|(_, (_, state))| state.clone())
            .collect()
    }

    /// How many per-counter objects of these states are alive (the states, their call
    /// queues and block caches), kept here or not.
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.group.count()
    }

    /// How many states are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        lock(&self.states).map.len()
    }

    /// Whether none is kept.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every state.
    #[cfg(test)]
    pub fn clear(&self) {
        lock(&self.states).map.clear();
    }

    /// Takes out every state with its key (the client closes: their tails are given
    /// back, then they are dropped).
    pub fn drain(&self) -> Vec<(K, Arc<CounterState>)> {
        lock(&self.states)
            .map
            .drain()
            .map(|(key, (_, state))| (key, state))
            .collect()
    }
}
