//! The entry point of the engine: reserve a block of values from a named counter.

use crate::engine::allocate::{allocate, IdRange};
use crate::engine::error::SeqResult;
use crate::engine::options::SequenceOptions;
use crate::engine::registry::ClientHandle;

/// Reserves `count` contiguous values of sequence `name` in database `database`.
pub async fn reserve(
    handle: &ClientHandle,
    database: &str,
    name: &str,
    count: i64,
    options: &SequenceOptions,
) -> SeqResult<IdRange> {
    let counter = options.counter(name)?;
    let store = handle.store(database)?;
    allocate(&store, &counter, options.policy(), count).await
}
