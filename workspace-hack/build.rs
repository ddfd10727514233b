//! Empty: it is here so that Cargo takes this crate's `[build-dependencies]` into account.

fn main() {}
