//! mongodb-sequence: atomic, human-readable auto-increment sequences for MongoDB.
//!
//! [`engine`] holds all logic and is tested with `cargo test`; [`binding`] is the thin
//! napi layer that converts JavaScript values to engine calls and back.

#![deny(clippy::all)]

#[macro_use]
extern crate napi_derive;

pub mod binding;
pub mod engine;
