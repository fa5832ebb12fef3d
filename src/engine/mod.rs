//! The napi-free core: sequence logic, client registry, value conversion and errors.
//! Nothing here knows about JavaScript; `crate::binding` converts types at the edge.
//!
//! # Glossary
//!
//! - **sequence**: the public word: what a user names and takes numbers from.
//! - **counter document**: the MongoDB document that stores one sequence; its **counter
//!   field** (`sequence_value` by default) holds the last value handed out. A
//!   **counter** in this code is that document as the engine sees it
//!   ([`store::counter_store::CounterRef`]: collection, field, name, locator, step).
//! - **name**: a string or a **scope** (an object of scalar fields), the counter
//!   document's `_id` ([`counter::counter_name`]); its **label** is how messages show it.
//! - **locator**: how the counter document is found: by `_id`, or by equality on other
//!   fields under a unique index ([`counter::locator`]).
//! - **step**: the distance between consecutive values (negative: descending). A
//!   **configured** counter stores its step with its **limits** (`minValue`, `maxValue`)
//!   and **cycle** flag ([`counter::sequence_config`]); a **plain** counter stores only
//!   its value and takes its step from the call.
//! - **start**: the first value of a counter created on first use or by `init`; `reset`
//!   goes back to it.
//! - **range**: values reserved in one write, `first, first + step, …, last`
//!   ([`counter::id_range`]).
//! - **call options**: what one call runs with ([`call_options::CallOptions`]).
//! - **prepared counter**: a counter ready for calls: its client, state and route (store,
//!   lane, mode, block cache, statistics); every call that takes values and every
//!   management write of one counter goes through it
//!   ([`alloc::prepared_counter::PreparedCounter`]).
//! - **counter state**: everything this process knows about one counter of one client:
//!   waiting calls, cached blocks ([`alloc::counter_state`]).
//! - **coalescing**: concurrent calls for one counter merged into one round trip.
//! - **block** / **cache**: with `cache: n`, a process reserves blocks of `n` values and
//!   serves calls from them; values left in a block are never handed out (gaps).
//! - **store**: the storage operations a sequence needs
//!   ([`store::counter_store::CounterStore`]); a **driver** gives the primitive writes on
//!   MongoDB ([`store::mongo_driver::MongoDriver`]), and
//!   [`store::driver_store::DriverStore`] makes a store of a driver.
//! - **client**: one driver client ([`client::handle`]); a **shared client** is the one
//!   client per connection target that calls share ([`client::registry`]), opened into the
//!   target's **client slot** ([`client::slot`]). A client's **phase** is open, retiring
//!   (no new calls; those pending go on) or closed (those pending reject), and only moves
//!   forward ([`client::lifecycle`]); a client replaced or released is **leaving** until
//!   its give-back and shutdown are done. A call that takes values or writes is
//!   **admitted** before it starts: counted as pending, then refused unless the client is
//!   open ([`client::handle::ClientHandle::admit`]), so a retirement waits for it. A
//!   shared client the registry retires (idle, past the client limit, replaced after a
//!   rotation) is **let go**: a call refused for that asks the registry again, while one
//!   refused because its user closed the client fails.
//! - **lane**: what calls of one counter state must agree on to share round trips and
//!   blocks: the creation policy and the write concern ([`alloc::counter_state::Lane`]).
//!   Calls share a coalescing queue when they agree on the lane and on the counter
//!   reference (the naming: collection, field, locator); a **block cache** holds the blocks
//!   of one lane, counter reference and block size ([`alloc::block_cache::BlockCache`]).
//!   "Slot" is used for one thing only: a target's client slot.
//! - **guarded write**: a write whose filter also holds a condition on what was read (the
//!   value, the configuration), so that it lands only if nobody changed the counter
//!   meanwhile ([`store::counter_store::FieldGuard`]); a **guard** in the engine is that
//!   condition. (The wrapper every export runs in is the binding's **boundary**.)
//! - **bounded call**: a call that gives up with its client: `CONNECTION` after the call
//!   timeout, `CLIENT_CLOSED` when the client closes
//!   ([`client::handle::ClientHandle::within`]).
//! - **settled**: a call is settled once its outcome (values or an error) is known.
//!   Options are not settled but have their rules **applied** ([`option_rules`]).
//! - **fetch state**: whether a block cache's block fetch is under way (`Idle` or
//!   `Fetching`, with the calls waiting for it), changed only by its named transitions
//!   ([`alloc::block_cache`]). To **drain** the fetches of a counter is to wait, within a
//!   deadline, until none of its block caches is fetching, woken when a fetch ends.
//! - **early stop**: a task dropped before its end (a panic, a runtime shutting down)
//!   runs its clean-up ([`panic_safety::OnEarlyStop`]): its waiting calls fail with
//!   `INTERNAL`.
//! - **turn**: a lock that makes work on one counter take turns in this process: the
//!   read-then-write of configured counters, management writes and give-backs, gapless
//!   transactions.
//! - **fencing**: a management write forgets what this process holds for the counter
//!   (blocks, configuration hint) before and after it, after **draining** its block
//!   fetches in flight ([`alloc::counter_state::CounterState::fenced`]). Forgetting is
//!   **invalidating** ([`alloc::counter_state::CounterState::invalidate`]); the values of
//!   forgotten blocks are counted as **discarded** ([`stats`]). One mechanism, these
//!   three words for its parts, and no other.
//! - **management**: operations that read or move a counter other than by taking values
//!   (current, set, reset, init, drop, raise, sync) ([`management`]).
//! - **give-back**: at close (or a handle's `release()`), the unused tail of a cache's
//!   blocks is returned to the counter when it still holds the value and the **token**
//!   this process's fetch left (each cache fetch writes a fresh one; `set`, `reset` and
//!   `setCountersWhere` remove it) and no raise **marked** a value of the tail
//!   ([`store::filters::CacheMarks`]: `_mseq_marks.<field>.cached` and `.raised`, under
//!   a top-level field no counter or locator may use).
//! - **stats**: counts of calls, values, round trips and discards ([`stats`]).
//! - **gapless**: the increment and the insert of the numbered documents in one
//!   transaction ([`gapless`]).

pub(crate) mod alloc;
pub(crate) mod call_options;
pub mod client;
pub mod counter;
pub mod error;
pub(crate) mod gapless;
pub(crate) mod management;
#[cfg(test)]
mod model_tests;
pub(crate) mod option_rules;
pub(crate) mod panic_safety;
pub(crate) mod stats;
pub(crate) mod store;
#[cfg(test)]
pub(crate) mod test_support;
pub mod text;
