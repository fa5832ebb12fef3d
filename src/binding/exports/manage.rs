//! Managing counters from JavaScript: `current`, `init`, `set`, `reset`, `drop` on a
//! `Sequence`, and `listSequences`, `syncToMax`.

use crate::binding::boundary::promise_call;
use std::future::Future;

use napi::bindgen_prelude::{Env, PromiseRaw, Unknown};

use crate::binding::js::required_string;
use crate::binding::output::{Listed, Output, Value};
use crate::binding::read::db::read_db;
use crate::binding::read::name::read_counter_name;
use crate::binding::read::named_counter::NamedCounter;
use crate::binding::read::option_reader::read_used_options;
use crate::binding::read::options::{ListTable, SyncTable};
use crate::binding::reserve::prepare::{admitted, open, KeptCounter};
use crate::binding::spawn::promise;
use crate::engine::alloc::prepared_counter::PreparedCounter;
use crate::engine::client::handle::Late;
use crate::engine::error::SeqResult;
use crate::engine::management::managed::Managed;
use crate::engine::text::validate::{check_collection, check_field, check_field_name, FieldUse};

/// Runs the management call `op` (a read, or a write, which the engine fences) on the
/// prepared counter of `named`, kept in `keep` when given, once admitted to its client
/// (a client the registry let go meanwhile is asked for again, as a call for values
/// does).
pub fn counter_promise<'env, F, Fut>(
    env: &'env Env,
    named: SeqResult<NamedCounter>,
    keep: Option<&KeptCounter>,
    op: F,
) -> napi::Result<PromiseRaw<'env, Output>>
where
    F: FnOnce(Managed, NamedCounter) -> Fut + Send + 'static,
    Fut: Future<Output = SeqResult<Output>> + Send + 'static,
{
    let keep = keep.cloned();
    promise(env, async move {
        let named = named?;
        let managed = admitted(
            &named,
            keep.as_ref(),
            None,
            PreparedCounter::try_manage,
            PreparedCounter::manage,
            |error| error,
        )
        .await?;
        op(managed, named).await
    })
}

/// Reads the `source` collection and `field` (a path) arguments of a sync.
pub fn read_source(source: &Unknown, field: &Unknown) -> SeqResult<(String, String)> {
    let source = required_string("source collection", source)?;
    check_collection(&source)?;
    let field = required_string("source field", field)?;
    check_field_name("source field", &field, FieldUse::SourcePath)?;
    Ok((source, field))
}

/// Lists the counters of a collection (default `counters`, field `sequence_value`) as
/// `[{ name, value }]`, sorted by name, with `step`, `minValue`, `maxValue` and `cycle`
/// for counters configured by `init` (limits beyond 2^53 - 1 as BigInts); a plain counter
/// holding a fraction another plugin left is listed as the whole number past it going up;
/// other documents whose field is not an integer are left out. Options: `collection`,
/// `field`, `bigint`, `uri`.
#[napi(
    ts_args_type = "db: SequenceDbLike, options?: O",
    ts_return_type = "Promise<Array<ListedSequence<O>>>",
    ts_generic_types = "O extends ListOptions = {}"
)]
pub fn list_sequences<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    promise_call(env, "listSequences", || {
        let read = read_used_options::<ListTable>(options.as_ref()).and_then(|o| {
            check_collection(&o.collection)?;
            check_field(&o.field)?;
            Ok((read_db(env, &db, o.uri.as_deref())?, o))
        });
        promise(env, async move {
            let (target, options) = read?;
            let reads = target.reads()?;
            let (handle, database) = open(target).await?;
            // Its command is published as a round-trip event.
            let store = handle
                .driver(&database)?
                .with_reads(reads)
                .publishing_commands();
            let listed = handle.within(
                async move { store.list(&options.collection, &options.field).await },
                Late::Read,
            );
            let mut entries = Vec::new();
            for counter in listed.await? {
                entries.push(Listed {
                    // One counter past 2^53 - 1 must not hide the others from a reader of
                    // numbers (a monitoring loop): it is listed, its value the nearest
                    // number, its `usedPercent` 100 of `rangeKind: 'number'`.
                    value: Value::of(counter.value, options.bigint),
                    capacity: counter.capacity(options.bigint),
                    capacity_as_number: counter.capacity(false),
                    stored: counter.stored,
                    id: counter.id,
                    config: counter.config,
                    bigint: options.bigint,
                });
            }
            Ok(Output::Listing(entries))
        })
    })
}

/// Raises counter `name` to at least the largest integer that `field` (a dotted path;
/// array elements included, as queries see them) reaches in collection `source` (an
/// atomic `$max`: never lowers it, never loses a racing call), creating it when absent,
/// so imported data never collides with new values; a descending counter is lowered to
/// the smallest instead (`$min`). Resolves with the counter's value afterwards. Options: `collection`, `field`, `bigint`, `uri`, `writeConcern`.
#[napi(
    ts_args_type = "db: SequenceDbLike, source: string, field: string, name: string | Record<string, string | number | boolean | bigint>, options?: O",
    ts_return_type = "Promise<SequenceNumber<O>>",
    ts_generic_types = "O extends SyncOptions = {}"
)]
pub fn sync_to_max<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    source: Unknown<'env>,
    field: Unknown<'env>,
    name: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    promise_call(env, "syncToMax", || {
        let source = read_source(&source, &field);
        let named = source.and_then(|(source, field)| {
            let options = read_used_options::<SyncTable>(options.as_ref())?;
            let name = read_counter_name(&name)?;
            Ok((
                NamedCounter::from_parts(env, &db, name, options)?,
                source,
                field,
            ))
        });
        let (named, source) = match named {
            Ok((named, source, field)) => (Ok(named), Some((source, field))),
            Err(e) => (Err(e), None),
        };
        counter_promise(env, named, None, move |prepared, named| async move {
            let (source, field) = source.expect("read with the counter");
            let value = prepared.sync_to(source, field).await?;
            Ok(Output::Single(Value::checked(
                &named.label,
                value,
                named.options.bigint,
            )?))
        })
    })
}
