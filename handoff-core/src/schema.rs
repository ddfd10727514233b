//! The JSON Schema of the record's wire form, and the operation catalog with the schemas of
//! every operation's arguments and result, generated from the Rust types.
//!
//! Both are checked in under `handoff-core/schema/` (`handoff.schema.json`, `catalog.json`):
//! generators of the faces' types and docs read them without building a binding, and a test
//! fails when they are stale (`UPDATE_SCHEMA=1 cargo test -p handoff-core schema` rewrites them).

use crate::record::Handoff;

/// The JSON Schema of [`Handoff`], pretty-printed, ending in a newline.
pub fn handoff_schema() -> String {
    let schema = schemars::schema_for!(Handoff);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// The operation catalog ([`crate::ops::catalog`]) as one JSON document, pretty-printed, ending
/// in a newline: `{"operations": [...], "$defs": {...}}`, each operation's `arguments` and
/// `result` schema with the named types they use hoisted into the one `$defs` (their
/// `#/$defs/<name>` references resolve against the document). `Err` names a type two schemas
/// define differently.
pub fn catalog_document() -> Result<String, String> {
    use serde_json::{Map, Value};
    let mut defs = Map::new();
    let mut hoist = |schema: &mut Value| -> Result<(), String> {
        let Some(Value::Object(found)) = schema.as_object_mut().and_then(|s| s.remove("$defs"))
        else {
            return Ok(());
        };
        schema.as_object_mut().map(|s| s.remove("$schema"));
        for (name, def) in found {
            match defs.get(&name) {
                Some(known) if *known != def => {
                    return Err(format!("two types named {name} in the catalog"));
                }
                Some(_) => {}
                None => {
                    defs.insert(name, def);
                }
            }
        }
        Ok(())
    };
    let mut operations = Vec::new();
    for op in crate::ops::catalog() {
        let mut value = serde_json::to_value(&op).map_err(|e| e.to_string())?;
        for part in ["arguments", "result"] {
            if let Some(schema) = value.get_mut(part) {
                schema.as_object_mut().map(|s| s.remove("$schema"));
                hoist(schema)?;
            }
        }
        operations.push(value);
    }
    let document = serde_json::json!({ "operations": operations, "$defs": defs });
    let mut text = serde_json::to_string_pretty(&document).map_err(|e| e.to_string())?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn checked_in_schema_is_current() {
        checked_in("handoff.schema.json", &super::handoff_schema());
    }

    #[test]
    fn checked_in_catalog_is_current() {
        let catalog = super::catalog_document();
        checked_in(
            "catalog.json",
            &catalog.expect("one definition per type name"),
        );
    }

    fn checked_in(name: &str, generated: &str) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("schema")
            .join(name);
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::create_dir_all(path.parent().expect("schema dir")).expect("mkdir");
            std::fs::write(&path, generated).expect("write schema");
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == generated,
            "{} is stale: run `UPDATE_SCHEMA=1 cargo test -p handoff-core schema` and commit it",
            path.display()
        );
    }
}
