//! `uniffi-bindgen`: generates Swift, Kotlin and Python sources from `libhandoff_ffi`.
//!
//! `cargo run -p handoff-ffi-bindgen -- generate --library target/release/libhandoff_ffi.so
//! --language swift --out-dir OUT` (or `make ffi-bindings`, which builds the library first).

fn main() {
    uniffi::uniffi_bindgen_main()
}
