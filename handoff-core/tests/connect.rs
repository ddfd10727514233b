//! `Store::connect_with`: one set of options for any URL, what each backend says it can do,
//! and options that a URL's backend cannot honour refused by name.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use handoff_core::{Capabilities, ConnectOptions, ErrorKind, NewHandoff, Store, Synchronous};

fn options() -> ConnectOptions {
    ConnectOptions {
        synchronous: Synchronous::Normal,
        lock_patience: Duration::from_secs(2),
        ..ConnectOptions::default()
    }
}

#[test]
fn every_local_url_opens_with_options_and_says_what_it_can_do() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = dir.path().join("store.db");
    let files = dir.path().join("files");
    let cases = [
        (
            "memory:".to_owned(),
            Capabilities {
                durable: false,
                shared_by_processes: false,
                shared_by_machines: false,
                backup: true,
                wakes_waiters: false,
            },
        ),
        (
            format!("sqlite:{}", sqlite.display()),
            Capabilities {
                durable: true,
                shared_by_processes: true,
                shared_by_machines: false,
                backup: true,
                wakes_waiters: false,
            },
        ),
        (
            ":memory:".to_owned(),
            Capabilities {
                backup: true,
                ..Capabilities::default()
            },
        ),
        (
            format!("files:{}", files.display()),
            Capabilities {
                durable: true,
                shared_by_processes: true,
                backup: true,
                ..Capabilities::default()
            },
        ),
    ];
    for (url, expected) in cases {
        let store = Store::connect_with(&url, &options()).unwrap();
        assert_eq!(store.capabilities(), expected, "{url}");
        let h = store.create(NewHandoff::new("t", "g")).unwrap();
        assert_eq!(store.get(&h.id).unwrap(), h, "{url}");
        let backup = dir.path().join(format!("backup-{}", fastrand::u64(..)));
        // Every backend writes the portable backup.
        store.backup(&backup).unwrap();
        assert!(expected.backup && backup.exists(), "{url}");
    }
}

#[test]
fn read_only_opens_an_sqlite_store_and_is_refused_by_name_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let h = Store::open(&path)
        .unwrap()
        .create(NewHandoff::new("t", "g"))
        .unwrap();
    let read_only = ConnectOptions {
        read_only: true,
        ..ConnectOptions::default()
    };
    let store = Store::connect_with(path.to_str().unwrap(), &read_only).unwrap();
    assert_eq!(store.get(&h.id).unwrap(), h);
    let err = store.create(NewHandoff::new("t", "g")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Storage, "{err}");
    assert_eq!(store.list(&Default::default()).unwrap().len(), 1);

    let files = format!("files:{}", dir.path().join("files").display());
    for url in [
        "memory:",
        files.as_str(),
        "postgres://nobody@127.0.0.1:1/none",
    ] {
        let err = Store::connect_with(url, &read_only).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Validation, "{url}: {err}");
        assert_eq!(err.problems()[0].field, "read_only", "{url}");
    }
    // Refused before anything was created.
    assert!(!dir.path().join("files").exists());
}

#[test]
fn options_a_store_cannot_honour_are_all_named_before_anything_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("files");
    let bad = ConnectOptions {
        read_only: true,
        pool_size: 0,
        connect_timeout: Duration::ZERO,
        ..ConnectOptions::default()
    };
    let err = Store::connect_with(&format!("files:{}", folder.display()), &bad).unwrap_err();
    let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["read_only", "pool_size", "connect_timeout"]);
    assert!(!folder.exists());

    for url in ["", "files:", "mysql://db/agents"] {
        let err = Store::connect(url).unwrap_err();
        assert_eq!(err.problems()[0].field, "url", "{url:?}");
    }
}
