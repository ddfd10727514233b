//! The JSON Schema of the record's wire form, generated from the Rust types.
//!
//! The generated schema is checked in at `handoff-core/schema/handoff.schema.json`; a test fails
//! when it is stale (`UPDATE_SCHEMA=1 cargo test -p handoff-core schema` rewrites it).

use crate::record::Handoff;

/// The JSON Schema of [`Handoff`], pretty-printed, ending in a newline.
pub fn handoff_schema() -> String {
    let schema = schemars::schema_for!(Handoff);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn checked_in_schema_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/handoff.schema.json");
        let generated = super::handoff_schema();
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::create_dir_all(path.parent().expect("schema dir")).expect("mkdir");
            std::fs::write(&path, &generated).expect("write schema");
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == generated,
            "{} is stale: run `UPDATE_SCHEMA=1 cargo test -p handoff-core schema` and commit it",
            path.display()
        );
    }
}
