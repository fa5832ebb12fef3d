//! Reading JavaScript arguments into engine values: options through one table per
//! option set (`table`, `options`), and names, `db` handles and documents (an insert's
//! in `insert_documents`).

pub mod bson;
pub mod db;
pub mod db_memo;
pub mod db_target;
pub mod file_copies;
pub mod insert_documents;
pub mod kinds;
pub mod name;
pub mod named_counter;
pub mod node_client;
pub mod object_memo;
pub mod option_reader;
pub mod options;
pub mod sequence_db;
pub mod table;
