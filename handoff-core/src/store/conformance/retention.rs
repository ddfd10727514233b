//! The conformance cases of pruning, backups and restores.

use super::*;

/// A folder of its own under the system's temporary folder, removed when dropped (the suite
/// is built without dev-dependencies under the `testing` feature).
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let path =
            std::env::temp_dir().join(format!("handoff-conformance-{:016x}", fastrand::u64(..)));
        std::fs::create_dir_all(&path).unwrap();
        Scratch(path)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A task of one step, run to its end by `worker`: its id and the step's handoff.
fn one_step_task_done(store: &Store, worker: &str) -> (String, String) {
    let id = store
        .create_task(NewTask {
            name: "One step".into(),
            steps: vec![StepSpec::new("only", "Only", worker)],
            ..NewTask::default()
        })
        .unwrap()
        .header
        .id;
    store.start_task(&id).unwrap();
    let claim = store
        .claim_next(worker, Some(&id), MINUTE)
        .unwrap()
        .unwrap();
    store.complete(&claim, "done").unwrap();
    assert_eq!(
        store.get_task(&id).unwrap().header.status,
        TaskStatus::Completed
    );
    (id, claim.handoff.id)
}

pub fn prune_removes_old_tasks_handoffs_and_keeps_their_history(store: Store) {
    let (store, clock) = timed(store);
    let (old, old_step) = one_step_task_done(&store, "worker");
    // A handoff of the old task in a session, finished: it goes, and leaves its session.
    let chat = store
        .create(NewHandoff::new(&old, "Answer the user").session_id("chat-1"))
        .unwrap();
    let kept_in_session = store
        .create(NewHandoff::new("elsewhere", "Other work").session_id("chat-1"))
        .unwrap();
    let claim = store.claim(&chat.id, "worker", MINUTE).unwrap();
    store.complete(&claim, "answered").unwrap();
    clock.advance(Duration::from_secs(40 * 86_400));
    let (recent, recent_step) = one_step_task_done(&store, "worker");
    // A cancelled task whose claimed step is still someone's work.
    let cancelled = store.create_task(blog_task()).unwrap().header.id;
    store.start_task(&cancelled).unwrap();
    let held = store
        .claim_next("researcher", Some(&cancelled), MINUTE)
        .unwrap()
        .unwrap();
    store.cancel_task(&cancelled, None).unwrap();
    let other_events = store.events(Some(&kept_in_session.id)).unwrap();

    // The defaults keep 100 tasks for 30 days: the 40-day-old task goes, the others stay.
    let pruned =
        <crate::ops::Prune as crate::ops::Operation>::call(&store, serde_json::json!({})).unwrap();
    assert_eq!(pruned, 1);
    assert!(store.get_task(&old).unwrap().header.pruned);
    for gone in [&old_step, &chat.id] {
        assert_eq!(
            kind_of(&store.get(gone).unwrap_err()),
            ErrorKind::NotFound,
            "{gone} is pruned"
        );
        assert!(store.events(Some(gone)).unwrap().is_empty());
    }
    assert!(
        store
            .list(&ListFilter {
                task_id: Some(old.clone()),
                ..ListFilter::default()
            })
            .unwrap()
            .is_empty()
    );
    assert!(store.chain(&old).unwrap().hops.is_empty());
    assert!(
        store
            .events_page(&EventFilter {
                task_id: Some(old.clone()),
                ..EventFilter::default()
            })
            .unwrap()
            .is_empty()
    );
    let session = store.session("chat-1").unwrap();
    assert_eq!(session.handoff_chain.len(), 1);
    assert_eq!(session.handoff_chain[0].handoff_id, kept_in_session.id);
    assert_eq!(
        store.events(Some(&kept_in_session.id)).unwrap(),
        other_events
    );
    // History and statistics still count the pruned task.
    assert_eq!(store.task_history(None).unwrap().len(), 3);
    assert_eq!(store.task_statistics().unwrap().total_tasks, 3);
    assert_eq!(store.get(&recent_step).unwrap().status, Status::Completed);
    assert!(!store.get_task(&recent).unwrap().header.pruned);

    // Keeping none prunes the rest, but a claimed handoff of a finished task stays, and
    // its holder can still finish it.
    assert_eq!(store.prune(0, 30).unwrap(), 2);
    assert_eq!(
        kind_of(&store.get(&recent_step).unwrap_err()),
        ErrorKind::NotFound
    );
    assert_eq!(store.get(&held.handoff.id).unwrap().status, Status::Claimed);
    store.complete(&held, "notes anyway").unwrap();
    // The store goes on: new work is written, numbered and read as before.
    let next = store.create(NewHandoff::new("after", "Go on")).unwrap();
    let events = store.events(None).unwrap();
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(events.last().unwrap().handoff_id, next.id);
}

/// A memory store on a whole-second clock (every backend keeps such times exactly) holding a
/// bit of everything: handoffs (one claimed), a running task, memory, a session, a setting.
fn varied_source() -> (Store, crate::Claim, String, Arc<ManualClock>) {
    let (source, clock) = timed(Store::memory());
    source.save_policy().unwrap();
    let first = source.create(rich("move-1")).unwrap();
    let claim = source.claim(&first.id, "gemini", MINUTE).unwrap();
    source
        .create(NewHandoff::new("move-1", "Check the copy").parent_id(&first.id))
        .unwrap();
    let task = source.create_task(blog_task()).unwrap().header.id;
    source.start_task(&task).unwrap();
    let research = source
        .claim_next("researcher", Some(&task), MINUTE)
        .unwrap()
        .unwrap();
    source.complete(&research, "notes in research.md").unwrap();
    let mut value = crate::Metadata::new();
    value.insert("tone".into(), serde_json::json!("plain"));
    source.memory_put("agent:writer", value, None).unwrap();
    (source, claim, task, clock)
}

/// Whether `a` and `b` answer alike: records, the log (in order), tasks, memory, sessions.
fn assert_same_answers(a: &Store, b: &Store, task: &str) {
    assert_eq!(
        a.list(&ListFilter::default()).unwrap(),
        b.list(&ListFilter::default()).unwrap()
    );
    let log = |s: &Store| -> Vec<(
        String,
        chrono::DateTime<chrono::Utc>,
        Option<String>,
        Change,
    )> {
        s.events(None)
            .unwrap()
            .into_iter()
            .map(|e| (e.handoff_id, e.at, e.actor, e.change))
            .collect()
    };
    assert_eq!(log(a), log(b));
    assert_eq!(a.get_task(task).unwrap(), b.get_task(task).unwrap());
    assert_eq!(a.task_events(task).unwrap(), b.task_events(task).unwrap());
    assert_eq!(
        a.replay(task, false).unwrap(),
        b.replay(task, false).unwrap()
    );
    assert_eq!(
        a.memory_get("agent:writer").unwrap(),
        b.memory_get("agent:writer").unwrap()
    );
    assert_eq!(a.session("sess-1").unwrap(), b.session("sess-1").unwrap());
    assert_eq!(a.saved_policy().unwrap(), b.saved_policy().unwrap());
    assert_eq!(a.chain("move-1").unwrap(), b.chain("move-1").unwrap());
}

pub fn backups_restore_into_any_store(store: Store) {
    let dir = Scratch::new();
    let (source, claim, task, clock) = varied_source();
    // The same time as the source's: its claims' leases have not run out.
    let store = store.with_clock(clock);
    let path = dir.path().join("source.backup");
    let written = source.backup(&path).unwrap();
    assert_eq!(written.records, 5);
    assert!(written.documents > 0 && written.settings == 1);
    assert_eq!(
        kind_of(&source.backup(&path).unwrap_err()),
        ErrorKind::Validation,
        "a backup never overwrites a file"
    );

    // Into the store under test, then out of it again into memory: both answer as the source.
    assert_eq!(store.restore(&path).unwrap(), written);
    assert_same_answers(&source, &store, &task);
    let again = dir.path().join("again.backup");
    let rewritten = store.backup(&again).unwrap();
    // Reading built the knowledge index on both sides (a lazy write): the source, read again,
    // holds what the copy does.
    let fresh = source.backup(dir.path().join("fresh.backup")).unwrap();
    assert_eq!(
        (rewritten.records, rewritten.events, rewritten.documents),
        (fresh.records, fresh.events, fresh.documents)
    );
    let copy = Store::memory();
    copy.restore(&again).unwrap();
    assert_same_answers(&source, &copy, &task);

    // A store with anything in it is refused, naming the store.
    let err = store.restore(&path).unwrap_err();
    assert_eq!(err.problems()[0].field, "store", "{err}");

    // The holder of a claim made before the backup settles it on the restored store, and a
    // claim without its secret is still refused.
    let forged = ClaimRef {
        secret: ClaimSecret::generate().unwrap(),
        ..ClaimRef::from(&claim)
    };
    assert_eq!(
        kind_of(&store.complete(forged, "forged").unwrap_err()),
        ErrorKind::LeaseLost
    );
    assert_eq!(
        store.complete(&claim, "moved").unwrap().status,
        Status::Completed
    );
    // Restored tasks go on where they were.
    let draft = store
        .claim_next("writer", Some(&task), MINUTE)
        .unwrap()
        .unwrap();
    store.complete(&draft, "drafted").unwrap();
}

pub fn damaged_backups_are_refused_and_write_nothing(store: Store) {
    let dir = Scratch::new();
    let (source, _, _, _) = varied_source();
    let path = dir.path().join("good.backup");
    source.backup(&path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let text = String::from_utf8(good.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let damaged = |name: &str, bytes: &[u8], expected: &str| {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let err = store.restore(&file).unwrap_err();
        assert_eq!(err.problems().len(), 1, "{name}: {err}");
        assert_eq!(err.problems()[0].field, "path", "{name}: {err}");
        assert!(
            err.problems()[0].rule.contains(expected),
            "{name}: {err} should say {expected}"
        );
        assert!(
            store.list(&ListFilter::default()).unwrap().is_empty(),
            "{name}"
        );
        assert!(store.events(None).unwrap().is_empty(), "{name}");
        assert!(
            store.memory_get("agent:writer").unwrap().is_none(),
            "{name}"
        );
        assert!(store.saved_policy().unwrap().is_none(), "{name}");
    };
    // Cut before its end, in the middle of a line, or edited: each is named.
    let without_end = lines[..lines.len() - 1].join("\n") + "\n";
    damaged("cut.backup", without_end.as_bytes(), "cut short");
    damaged("torn.backup", &good[..good.len() - 10], "cut short");
    let edited = text.replacen("Finish the migration", "Finish the migrashun", 1);
    damaged("edited.backup", edited.as_bytes(), "checksum");
    let mut extra = good.clone();
    extra.extend_from_slice(b"{\"setting\":{\"key\":\"z\",\"value\":\"1\"}}\n");
    damaged("extra.backup", &extra, "goes on after");
    // Foreign files: another format, an empty file, binary noise, a newer version.
    damaged(
        "foreign.json",
        b"{\"handoffs\": []}\n",
        "not a handoff backup",
    );
    damaged("empty.backup", b"", "not a handoff backup");
    damaged(
        "noise.backup",
        &[0xff, 0x00, 0x13, b'\n', 0x80],
        "not a handoff backup",
    );
    let newer = text.replacen("handoff-backup 1", "handoff-backup 2", 1);
    damaged("newer.backup", newer.as_bytes(), "not a handoff backup");
    // A line that is no backup line.
    let mut odd = lines.clone();
    odd.insert(2, "{\"table\":\"drop\"}");
    damaged("odd.backup", (odd.join("\n") + "\n").as_bytes(), "line 3");
    let missing = dir.path().join("missing.backup");
    assert_eq!(
        store.restore(&missing).unwrap_err().problems()[0].field,
        "path"
    );
    // The good file still restores.
    store.restore(&path).unwrap();
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 5);
}
