//! Resolving a counter read from a call's arguments: its client opened (a shared client
//! on first use) or found open, and the counter prepared, or the one a handle keeps (a [`KeptCounter`]) by
//! an earlier call.

use std::sync::{Arc, Mutex};

use crate::binding::read::db_target::DbTarget;
use crate::binding::read::named_counter::NamedCounter;
use crate::binding::reserve::order::Ticket;
use crate::engine::alloc::prepared_counter::PreparedCounter;
use crate::engine::client::handle::ClientHandle;
use crate::engine::client::registry::SHARED_CLIENTS;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::panic_safety::lock;

/// A counter prepared by an earlier call, kept to skip the preparation next time.
pub type KeptCounter = Arc<Mutex<Option<PreparedCounter>>>;

/// `use_it` applied to the prepared counter kept in `keep`, when it holds one for an open
/// client.
pub fn kept<T>(keep: &KeptCounter, use_it: impl FnOnce(&PreparedCounter) -> T) -> Option<T> {
    let kept = lock(keep);
    kept.as_ref().filter(|r| !r.is_closed()).map(use_it)
}

/// The client and database of `target` when no waiting is needed (own client, or a
/// shared client already open).
pub fn open_now(target: &DbTarget) -> Option<(Arc<ClientHandle>, &str)> {
    match target {
        DbTarget::Own(handle, db) => Some((handle.clone(), db)),
        DbTarget::Shared(connection, db, _) => {
            SHARED_CLIENTS.try_get(connection).map(|h| (h, db.as_str()))
        }
    }
}

/// The client and database of `target`, opening the shared client on first use.
pub async fn open(target: DbTarget) -> SeqResult<(Arc<ClientHandle>, String)> {
    match target {
        DbTarget::Own(handle, db) => Ok((handle, db)),
        DbTarget::Shared(connection, db, _) => Ok((SHARED_CLIENTS.get(&connection).await?, db)),
    }
}

/// `named` prepared in `handle`'s `database` (a client at hand), and kept in `keep` when
/// given.
pub fn prepare_in(
    named: &NamedCounter,
    handle: &Arc<ClientHandle>,
    database: &str,
    keep: Option<&KeptCounter>,
) -> SeqResult<PreparedCounter> {
    let options = named.effective_options();
    let prepared = PreparedCounter::new(
        handle,
        database,
        &named.counter,
        &options,
        named.stats.clone(),
    )?;
    if let Some(keep) = keep {
        *lock(keep) = Some(prepared.clone());
    }
    Ok(prepared)
}

/// The prepared counter of `named`: the one kept in `keep` when it holds one, otherwise
/// one prepared now, its client opened first if need be (and kept in `keep`, when given).
pub async fn prepare(named: NamedCounter, keep: Option<KeptCounter>) -> SeqResult<PreparedCounter> {
    if let Some(prepared) = keep.as_ref().and_then(|s| kept(s, Clone::clone)) {
        return Ok(prepared);
    }
    let (handle, database) = open(named.target.clone()).await?;
    prepare_in(&named, &handle, &database, keep.as_ref())
}

/// How many times a call asks the registry again for a client it let go.
const LET_GO_RETRIES: u32 = 3;

/// The call `admit` makes of the prepared counter of `named` ([`prepare`]), once the
/// call's `ticket`, when it has one, is at the front of its line. A call whose client
/// the registry let go in the instant since it was found open (`admit` hands it back:
/// `None`, with nothing done) asks the registry again, as a call made a moment later
/// would; let go again every time, it is refused by `refuse`, as a closed client's call
/// would be, rather than asking without end. A counter that could not be prepared fails
/// the call with what `unprepared` makes of the error.
pub async fn admitted<T>(
    named: &NamedCounter,
    keep: Option<&KeptCounter>,
    ticket: Option<&Ticket>,
    admit: impl Fn(&PreparedCounter) -> Option<SeqResult<T>>,
    refuse: impl FnOnce(&PreparedCounter) -> SeqResult<T>,
    unprepared: impl Fn(SeqError) -> SeqError,
) -> SeqResult<T> {
    let mut let_go = 0;
    loop {
        let prepared = prepare(named.clone(), keep.cloned()).await;
        if let Some(ticket) = ticket {
            ticket.front_of_line().await;
        }
        let prepared = prepared.map_err(&unprepared)?;
        match admit(&prepared) {
            Some(admitted) => return admitted,
            None if let_go == LET_GO_RETRIES => return refuse(&prepared),
            None => let_go += 1,
        }
    }
}
