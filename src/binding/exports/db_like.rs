//! TypeScript-only shapes for `index.d.ts`.

/// What the `db` argument accepts: a Node driver `Db` (v6 or v7), `mongoose.connection.db`,
/// or a `SequenceDb` from `connect(uri)`. Only `databaseName` and, for a Node driver `Db`,
/// its `client` are read.
#[napi(object)]
pub struct SequenceDbLike {
    /// The database name.
    pub database_name: String,
}
