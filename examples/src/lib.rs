//! Holds the examples; run them with `cargo run --example NAME`.
