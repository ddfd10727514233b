//! Bundle import on arbitrary input: `import_bundle` into an in-memory store must refuse bad
//! text with a validation error and write nothing, or import it, after which importing it again
//! adds nothing. Random text rarely carries a right content hash, so the input read as a bundle
//! is also sealed and imported, so that the checks behind the hash are reached too.
#![no_main]

use handoff_core::bundle::BundleData;
use handoff_core::{ErrorKind, Store};
use libfuzzer_sys::fuzz_target;

/// Imports `json` into a fresh store's `branch` and checks the contract either way.
fn import(json: &str, branch: &str) {
    let store = Store::memory();
    match store.import_bundle(json, branch) {
        Ok(first) => {
            let again = match store.import_bundle(json, branch) {
                Ok(again) => again,
                Err(e) => panic!("a bundle imported once failed the second time: {e}"),
            };
            assert_eq!(again.facts_added + again.conversations_added, 0, "imported twice");
            assert_eq!(again.facts_skipped, first.facts_added);
            assert_eq!(again.conversations_skipped, first.conversations_added);
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Validation, "{e}");
            let facts = store.facts(branch, None).map(|f| f.len()).unwrap_or(0);
            let conversations = store
                .list_conversations(None, None)
                .map(|c| c.len())
                .unwrap_or(0);
            assert_eq!((facts, conversations), (0, 0), "a refused import wrote");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    import(text, "main");
    // Past the hash: the same content, sealed.
    if let Ok(bundle) = serde_json::from_str::<BundleData>(text)
        && let Ok(sealed) = bundle.seal()
        && let Ok(json) = sealed.to_json()
    {
        import(&json, "task/fuzz");
    }
});
