//! TypeScript-only shapes for `index.d.ts`.

/// What the `db` argument accepts: a Node driver `Db` (v6 or v7), `mongoose.connection.db`,
/// or a `SequenceDb` from `connect(uri)`. Only `databaseName` and, for a Node driver `Db`,
/// its `client` are read.
#[napi(object)]
pub struct SequenceDbLike {
    /// The database name.
    pub database_name: String,
}

/// A block of reserved values, `first..=last`.
#[napi(object, object_to_js = false)]
pub struct SequenceRange {
    /// First value of the block.
    #[napi(ts_type = "T")]
    pub first: f64,
    /// Last value of the block.
    #[napi(ts_type = "T")]
    pub last: f64,
    /// Number of values (`last - first + 1`).
    pub count: f64,
}
