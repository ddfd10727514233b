// The generated Kotlin, compiled and run against libhandoff_ffi: the lifecycle, errors,
// fencing, claim secrets and cancel rights, what an operator meets (a stuck writer, read-only
// opens, a saved policy, depth limits, paged events), racing threads, a Kotlin tokenizer, swarm
// tools, stores opened by URL with options and their capabilities, tasks whose steps go to
// their agents, versioned memory with a Kotlin updater, sessions, a manager/worker protocol run,
// curated memory (cherry-picks, a Kotlin judge and verifier, merges, the successor's packet),
// knowledge bundles (share tokens, imports into another store, hostile bundles), a task's
// replay and two runs compared, leases held while the work runs, and a panic that must arrive
// as an exception.
// `make test-ffi` compiles this file with the generated sources and runs it.

import uniffi.handoff_ffi.*
import uniffi.handoff_ffi_core.*
// Both packages have an InternalException; the one a call of this binding throws is its own.
import uniffi.handoff_ffi.InternalException
import java.time.Duration
import java.util.concurrent.CyclicBarrier
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import kotlin.system.exitProcess

fun check(condition: Boolean, what: () -> String) {
    if (!condition) throw AssertionError(what())
}

inline fun <reified E : Throwable> raises(block: () -> Unit): E {
    try {
        block()
    } catch (e: Throwable) {
        if (e is E) return e
        throw AssertionError("expected ${E::class.simpleName}, got $e")
    }
    throw AssertionError("expected ${E::class.simpleName}, nothing was thrown")
}

fun task(id: String = "task-1", goal: String = "Write the parser") = CreateOptions(taskId = id, goal = goal)

fun lifecycle() {
    val clock = ManualClock()
    Store.memory(OpenOptions(clock = clock)).use { store ->
        val h = store.create(task().copy(fromAgent = "claude", pending = listOf("tests"),
            reason = HandoffReason.ContextLimit(85.toUByte())))
        check(h.status == HandoffStatus.PENDING) { "new handoffs are pending" }
        check(h.createdAt == clock.now()) { "created at the store's clock" }
        check(h.claimedBy == null) { "optional fields are null" }
        val claim = store.claim(h.id, "gemini", Duration.ofSeconds(60))
        check(claim.token == 1uL) { "first token is 1" }
        check(claim.handoff.leaseUntil == clock.now().plusSeconds(60)) { "lease from the clock" }
        clock.advance(Duration.ofSeconds(30))
        store.heartbeat(claim.reference())
        val done = store.complete(claim.reference(), "merged")
        check(done.status == HandoffStatus.COMPLETED && done.outcome == "merged") { "completed" }
        val changes = store.events(h.id).map { it.change }
        // The created event names the task and the addressee (none: open); the record is get's.
        check(changes.first() == Change.Created("task-1", null, 0) && changes.last() == Change.Completed("merged", null)) { "$changes" }
        check(store.chain("task-1").text == "claude → gemini") { "chain" }
        check(handoffToMarkdown(h).contains("Write the parser")) { "markdown" }
        check(handoffFromJson(handoffToJson(h)) == h) { "JSON round trip" }
    }
}

// A failure is retried while attempts remain, then final, each with its error in the log.
fun failures() {
    Store.memory().use { store ->
        val h = store.create(task().copy(maxAttempts = 2u))
        val retried = store.fail(store.claim(h.id, "a").reference(), "the API timed out")
        check(retried.status == HandoffStatus.PENDING && retried.attempts == 1u) { "$retried" }
        val failed = store.fail(store.claim(h.id, "b").reference(), "still timing out")
        check(failed.status == HandoffStatus.FAILED && failed.outcome == "still timing out") { "$failed" }
        val changes = store.events(h.id).map { it.change }
        check(changes[2] == Change.AttemptFailed(1uL, "the API timed out")) { "$changes" }
        check(changes.last() == Change.Failed(2uL, "still timing out")) { "$changes" }
    }
}

fun errors() {
    Store.memory().use { store ->
        val missing = raises<HandoffException.NotFound> { store.get("nope") }
        check(missing.id == "nope" && missing.description == "handoff nope not found") { "$missing" }
        val invalid = raises<HandoffException.Validation> { store.create(task("bad id!", "")) }
        check(invalid.problems.map { it.field }.containsAll(listOf("task_id", "goal"))) { "${invalid.problems}" }
        check(store.list().isEmpty()) { "a refused create changes nothing" }
        // The arguments as JSON (an LLM tool call): every problem at once, by the core's names.
        val json = raises<HandoffException.Validation> {
            store.createJson("""{"task_id": "t", "goal": "", "reason": "sleepy", "context_pct": 101}""")
        }
        check(json.problems.map { it.field } == listOf("reason", "goal", "context_pct")) { "${json.problems}" }
        val h = store.create(task())
        store.claim(h.id, "a")
        val taken = raises<HandoffException.AlreadyClaimed> { store.claim(h.id, "b") }
        check(taken.holder == "a") { "holder" }
        raises<HandoffException.Validation> { store.claim(h.id, "b", Duration.ZERO) }
    }
}

fun fencing() {
    val clock = ManualClock()
    Store.memory(OpenOptions(clock = clock)).use { store ->
        val h = store.create(task())
        val stale = store.claim(h.id, "a", Duration.ofSeconds(10))
        clock.advance(Duration.ofSeconds(11))
        val fresh = store.claim(h.id, "b")
        check(fresh.token > stale.token) { "tokens grow" }
        val lost = raises<HandoffException.LeaseLost> { store.complete(stale.reference(), "late") }
        check(lost.token == stale.token) { "the stale token is named" }
        check(store.complete(fresh.reference(), "done").status == HandoffStatus.COMPLETED) { "the fresh claim completes" }
    }
}

// Issue 12: nobody settles a claim from what they can read; cancel rights.
fun claimSecrets() {
    Store.memory().use { store ->
        val h = store.create(task().copy(fromAgent = "planner"))
        val claim = store.claim(h.id, "coder")
        check(Regex("hcs_[0-9a-f]{64}").matches(claim.secret)) { "a secret in the claim" }
        check(claim.secret !in claim.toString() && claim.secret !in claim.reference().toString()) { "printing hides it" }
        check(claim.secret !in handoffToJson(store.get(h.id))) { "the record does not hold it" }
        // Anyone can read the token; a reference built from it with another secret fails.
        val seen = store.get(h.id)
        val forged = ClaimRef(seen.id, seen.claimToken!!, "hcs_" + "0".repeat(64), Duration.ofMinutes(5))
        val before = store.get(h.id) to store.events(h.id)
        raises<HandoffException.LeaseLost> { store.complete(forged, "forged") }
        raises<HandoffException.LeaseLost> { store.heartbeat(forged) }
        raises<HandoffException.LeaseLost> { store.release(forged, "mine") }
        raises<HandoffException.LeaseLost> { store.fail(forged, "broke") }
        raises<HandoffException.LeaseLost> { store.cancelClaim(forged) }
        check((store.get(h.id) to store.events(h.id)) == before) { "a forged reference changes nothing" }
        val malformed = raises<HandoffException.Validation> { store.complete(forged.copy(secret = "guess")) }
        check(malformed.problems.map { it.field } == listOf("secret")) { "${malformed.problems}" }
        // The claimer's reference works, also rebuilt from its four values elsewhere.
        store.heartbeat(claim.reference())
        val handedOn = ClaimRef(h.id, claim.token, claim.secret, claim.lease)
        check(store.complete(handedOn, "done").status == HandoffStatus.COMPLETED) { "the real claim completes" }

        // Cancel: the creator by name, the holder with its claim, anyone when there is no creator.
        val mine = store.create(task("t2").copy(fromAgent = "planner"))
        raises<HandoffException.InvalidTransition> { store.cancel(mine.id, "intruder") }
        check(store.cancel(mine.id, "planner", "plan changed").status == HandoffStatus.CANCELLED) { "creator" }
        val held = store.claim(store.create(task("t3").copy(fromAgent = "planner")).id, "coder")
        raises<HandoffException.InvalidTransition> { store.cancel(held.handoff.id, "coder") }
        check(store.cancelClaim(held.reference(), "cannot be done").status == HandoffStatus.CANCELLED) { "holder" }
        check(store.events(held.handoff.id).last().actor == "coder") { "the holder is the actor" }
        check(store.cancel(store.create(task("t4")).id, "ops").status == HandoffStatus.CANCELLED) { "no creator" }
    }
}

// Issue 12: what an operator meets.
fun operators(dir: String) {
    val db = "$dir/ops.db"
    val policy = ChainPolicy(maxHandoffs = 3uL, collaborators = mapOf("planner" to listOf("coder")))
    Store.open(db, OpenOptions(policy = policy, lockPatience = Duration.ofMillis(300))).use { store ->
        val h = store.create(task().copy(fromAgent = "planner", toAgent = "coder"))
        store.savePolicy()
        // A writer stopped while it holds the write lock: writers get Busy, readers read.
        val holder = ProcessBuilder("flock", "$db-lock", "-c", "echo held; sleep 60").start()
        try {
            check(holder.inputStream.bufferedReader().readLine() == "held") { "flock did not take the lock" }
            val busy = raises<HandoffException.Busy> { store.create(task("t2")) }
            check("not damaged" in busy.description) { busy.description }
            check(store.get(h.id) == h && store.list().size == 1) { "reads do not wait" }
        } finally {
            // flock's shell and its sleep inherit the lock: end them all, and wait for them.
            val children = holder.descendants().toList()
            children.forEach { it.destroy() }
            holder.destroy()
            children.forEach { it.onExit().get(10, TimeUnit.SECONDS) }
            holder.waitFor()
        }
        store.create(task("t2"))
    }
    // A second open without a policy applies the saved one; a read-only open reads.
    Store.open(db).use { store ->
        check(store.savedPolicy()?.policy?.maxHandoffs == 3uL) { "${store.savedPolicy()}" }
        raises<HandoffException.ChainViolation> { store.create(task("t3").copy(fromAgent = "planner", toAgent = "reviewer")) }
    }
    Store.openReadOnly(db).use { store ->
        check(store.list().size == 2) { "read-only reads" }
        raises<HandoffException.Storage> { store.create(task("t4")) }
    }
    raises<HandoffException.Validation> { Store.memory(OpenOptions(limits = Limits(maxDepth = 101uL))) }
    // The event log in pages, by cursor.
    Store.memory().use { store ->
        repeat(5) { store.create(task("paged")) }
        var after: ULong? = null
        val sizes = mutableListOf<Int>()
        while (true) {
            val page = store.events(taskId = "paged", after = after, limit = 2uL)
            if (page.isEmpty()) break
            sizes += page.size
            after = page.last().seq
        }
        check(sizes == listOf(2, 2, 1)) { "$sizes" }
    }
}

fun racingThreads(path: String) {
    Store.open(path, OpenOptions(synchronous = Synchronous.NORMAL)).use { store ->
        val threads = 8
        repeat(10) { round ->
            val h = store.create(task("race-$round"))
            val barrier = CyclicBarrier(threads)
            val won = AtomicInteger()
            val pool = Executors.newFixedThreadPool(threads)
            repeat(threads) { i ->
                pool.execute {
                    barrier.await()
                    try {
                        store.claim(h.id, "agent-$i"); won.incrementAndGet()
                    } catch (e: HandoffException.AlreadyClaimed) {
                    }
                }
            }
            pool.shutdown()
            check(pool.awaitTermination(60, TimeUnit.SECONDS)) { "a claimer hung" }
            check(won.get() == 1) { "exactly one of $threads claimers wins, not ${won.get()}" }
        }
    }
}

class Words : Tokenizer {
    override fun countTokens(text: String): ULong = text.split(" ").size.toULong()
}

class Exploding : Tokenizer {
    override fun countTokens(text: String): ULong = throw IllegalStateException("tokenizer crashed")
}

fun context() {
    val builder = ContextBuilder(budgetTokens = 500uL, tokenizer = Words())
    builder.addFacts(listOf("the CI key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"))
    val packet = builder.build()
    check("[REDACTED:openai-api-key]" in packet.markdown) { "redacted" }
    check(packet.manifest.redacted.single().rule == "openai-api-key") { "reported" }
}

fun swarmTools() {
    val registry = AgentRegistry()
    registry.add("triage", "routes requests", listOf("billing"))
    registry.add("billing", "invoices and refunds")
    check("\"transfer_to_billing\"" in registry.tools("triage", Provider.OPENAI_CHAT)) { "tools" }
    val response = """{"choices":[{"index":0,"message":{"role":"assistant","content":null,
        "tool_calls":[{"id":"call_1","type":"function","function":{"name":"transfer_to_billing",
        "arguments":"{\"summary\":\"double charge\",\"pending\":[\"refund\"]}"}}]}}]}"""
    val intent = registry.detect(response, "triage") ?: throw AssertionError("no intent detected")
    check(intent.target == "billing" && intent.callId == "call_1") { "$intent" }
    Store.memory(OpenOptions(policy = registry.policy())).use { store ->
        val h = store.create(intent.toCreateOptions("T-9", "triage", "Refund customer 42"))
        check(h.toAgent == "billing" && h.pendingSteps == listOf("refund")) { "$h" }
    }
    raises<HandoffException.Validation> { registry.detect("[[[", "triage") }
}

// What a first user meets (issue 11): display names, agents from files, redacted Markdown,
// chain limits along paths and open handoffs checked at claim time.
fun firstUse(dir: String) {
    val files = java.io.File(dir, "agents").apply { mkdirs() }
    java.io.File(files, "support.md").writeText(
        "---\nname: Tech Support\n---\n# Desk\n\n## Collaborations\n- **Billing agent**: refunds\n")
    java.io.File(files, "billing.md").writeText("# Billing agent\n\nRefunds.\n")
    val registry = AgentRegistry.fromMarkdownDir(files.path)
    check(registry.agents().map { it.name } == listOf("Billing agent", "Tech Support")) { "${registry.agents()}" }
    check("\"transfer_to_billing_agent\"" in registry.tools("Tech Support", Provider.ANTHROPIC)) { "tool names" }
    val block = """{"type":"tool_use","id":"toolu_1","name":"transfer_to_billing_agent","input":{"summary":"refund"}}"""
    val intent = registry.detect(block, "Tech Support") ?: throw AssertionError("no intent in a lone block")
    check(intent.target == "Billing agent") { "$intent" }
    raises<HandoffException.Validation> { registry.detect("""{"foo":1}""", "Tech Support") }
    raises<HandoffException.Validation> { registry.add(" padded") }

    val secret = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6l"
    Store.memory(OpenOptions(policy = registry.policy())).use { store ->
        val h = store.create(intent.toCreateOptions("T-1", "Tech Support", "Refund with $secret"))
        val md = handoffToMarkdown(h)
        check(secret !in md && "[REDACTED:openai-api-key]" in md) { "redacted" }
        check(secret in handoffToMarkdown(h, redact = false) && secret in handoffToJson(h)) { "opt-out and JSON keep it" }
        check(store.claimNext("Billing agent")?.handoff?.id == h.id) { "claimed by display name" }
        val open = store.create(task("T-2").copy(fromAgent = "Billing agent"))
        val refused = raises<HandoffException.ChainViolation> { store.claim(open.id, "Tech Support") }
        check(refused.rule == ChainRule.NotCollaborator("Billing agent", "Tech Support")) { "${refused.rule}" }
        check(store.claimNext("Tech Support") == null) { "claimNext skips what it may not take" }
    }
    Store.memory().use { store ->
        repeat(1000) { store.create(task("queue").copy(fromAgent = "planner")) }
        val agents = (1..7).map { "a$it" }
        var parent: String? = null
        for (hop in 0 until 5) {
            parent = store.create(task("long").copy(fromAgent = agents[hop], toAgent = agents[hop + 1], parentId = parent)).id
        }
        val tooLong = raises<HandoffException.ChainViolation> {
            store.create(task("long").copy(fromAgent = "a6", toAgent = "a7", parentId = parent))
        }
        check(tooLong.rule == ChainRule.MaxHandoffs(5uL) && tooLong.path == agents) { "$tooLong" }
        raises<HandoffException.Validation> {
            store.create(task().copy(reason = HandoffReason.ContextLimit(85.toUByte()), contextPct = 90.toUByte()))
        }
    }
}

fun panicBecomesAnException() {
    val builder = ContextBuilder(budgetTokens = 100uL, tokenizer = Exploding())
    builder.addFacts(listOf("a fact"))
    raises<InternalException> { builder.build() }
    Store.memory().use { check(it.create(task()).status == HandoffStatus.PENDING) { "the library still works" } }
}

fun connect(dir: String) {
    Store.connect("memory:").use { store ->
        val h = store.create(task().copy(toAgent = "coder"))
        check(store.events(h.id).single().change == Change.Created("task-1", "coder", 0)) { "${store.events(h.id)}" }
        val claim = store.claimNext("coder", wait = Duration.ofSeconds(5)) ?: error("nothing claimed")
        check(claim.handoff.id == h.id) { "connect(\"memory:\") is a working store" }
        check(store.claimNext("coder", wait = Duration.ofMillis(100)) == null) { "a wait with no work ends empty" }
        check(store.capabilities() == Capabilities(durable = false, sharedByProcesses = false,
            sharedByMachines = false, backup = true, wakesWaiters = false)) { "${store.capabilities()}" }
    }
    val bad = raises<HandoffException.Validation> { Store.connect("http://example.com/x") }
    check(bad.problems.map { it.field } == listOf("url")) { "${bad.problems}" }
    val badTls = raises<HandoffException.Validation> { Store.connect("postgres://u@h/db?sslmode=verify") }
    check(badTls.problems.map { it.field } == listOf("url.sslmode")) { "${badTls.problems}" }

    // One set of options for every URL; each store reads what concerns it, and only SQLite
    // opens read-only: memory refuses it by name.
    val options = OpenOptions(synchronous = Synchronous.NORMAL, lockPatience = Duration.ofSeconds(2),
        poolSize = 2uL, connectTimeout = Duration.ofSeconds(3))
    val db = "$dir/connect.db"
    val id = Store.connect("sqlite:$db", options).use { store ->
        check(store.capabilities() == Capabilities(durable = true, sharedByProcesses = true,
            sharedByMachines = false, backup = true, wakesWaiters = false)) { "${store.capabilities()}" }
        store.create(task()).id
    }
    Store.connect(db, OpenOptions(readOnly = true)).use { store ->
        check(store.get(id).id == id) { "a read-only connect reads" }
        raises<HandoffException.Storage> { store.create(task("t2")) }
    }
    val readOnly = raises<HandoffException.Validation> { Store.connect("memory:", OpenOptions(readOnly = true)) }
    check(readOnly.problems.map { it.field } == listOf("read_only")) { "${readOnly.problems}" }
    raises<HandoffException.Validation> { Store.memory(OpenOptions(readOnly = true)) }
}

fun plan() = listOf(
    StepSpec(id = "research", name = "Research", agent = "researcher"),
    StepSpec(id = "draft-ko", name = "Draft in Korean", agent = "writer", dependencies = listOf("research")),
    StepSpec(id = "review", name = "Review", agent = "reviewer", dependencies = listOf("draft-ko")),
)

// A 3-step plan: each step goes to its agent once the steps it waits for are done; a step's
// tokens count for the step and the task; the seed's task-state.json form is there too.
fun tasks() {
    Store.memory().use { store ->
        val created = store.createTask("Blog post", "A bilingual post", plan(), context = """{"user_request":"write it"}""")
        check(created.status == TaskStatus.PENDING && created.context == """{"user_request":"write it"}""") { "$created" }
        val started = store.startTask(created.id)
        check(started.steps.map { it.status } == listOf(StepStatus.READY, StepStatus.PENDING, StepStatus.PENDING)) { "$started" }
        check(store.claimNext("writer") == null) { "the draft waits for the research" }
        val research = store.claimNext("researcher") ?: throw AssertionError("no research step offered")
        check(research.handoff.id == started.steps[0].handoffId) { "the step's handoff" }
        val done = store.complete(research.reference(), "three sources", tokensUsed = 1200uL)
        check(store.events(done.id).last().change == Change.Completed("three sources", 1200uL)) { "tokens in the log" }
        val task = store.getTask(created.id)
        check(task.steps[0].status == StepStatus.COMPLETED && task.steps[0].tokensUsed == 1200uL) { "${task.steps[0]}" }
        check(task.tokensUsed == 1200uL && task.steps[1].status == StepStatus.READY) { "$task" }
        val draft = store.claimNext("writer") ?: throw AssertionError("no draft step offered")
        check(draft.handoff.id == task.steps[1].handoffId) { "the writer gets draft-ko" }
        check(task.taskJson.contains("\"current_steps\":[\"draft-ko\"]")) { task.taskJson }
        val kinds = store.taskEvents(task.id).map { it.kind }
        check(kinds.take(3) == listOf("created", "started", "step_offered")) { "$kinds" }
        check(store.listTasks(status = TaskStatus.IN_PROGRESS).map { it.id } == listOf(task.id)) { "listed" }
        check(store.pauseTask(task.id).status == TaskStatus.PAUSED) { "paused" }
        check(store.resumeTask(task.id).status == TaskStatus.IN_PROGRESS) { "resumed" }
        check(store.cancelTask(task.id, "enough").status == TaskStatus.CANCELLED) { "cancelled" }
        check(store.taskHistory().single().result == TaskResult.FAILURE) { "history" }
        check(store.taskStatistics().byResult == mapOf("failure" to 1uL)) { "statistics" }
    }
}

// A bad plan reports every problem at once, by the path of the step concerned, and writes
// nothing; a stale update is a conflict naming both versions and changes nothing.
fun badPlansAndStaleUpdates() {
    Store.memory().use { store ->
        val bad = listOf(
            StepSpec(id = "a", name = "A", agent = "researcher", dependencies = listOf("c")),
            StepSpec(id = "a", name = "A again", agent = "writer"),
            StepSpec(id = "b", name = "B", agent = "writer", dependencies = listOf("ghost")),
            StepSpec(id = "c", name = "C", agent = "reviewer", dependencies = listOf("a")),
        )
        val invalid = raises<HandoffException.Validation> { store.createTask("Bad", "goal", bad) }
        val fields = invalid.problems.map { it.field }
        check(fields == listOf("steps[1].id", "steps[2].dependencies[0]", "steps[0].dependencies")) { "$fields" }
        check(store.listTasks().isEmpty()) { "nothing written" }

        val task = store.createTask("Blog post", "A bilingual post", plan())
        val stale = raises<HandoffException.Conflict> { store.updateTask(task.id, task.version + 1uL, goal = "Another") }
        check(stale.expectedVersion == task.version + 1uL && stale.actualVersion == task.version) { "$stale" }
        check(store.getTask(task.id) == task) { "a stale update changes nothing" }
        val updated = store.updateTask(task.id, task.version, goal = "Another")
        check(updated.goal == "Another" && updated.version > task.version) { "$updated" }
        val missing = raises<HandoffException.NotFound> { store.getTask("nope") }
        check(missing.what == "task" && missing.id == "nope") { "$missing" }
    }
}

// Adds one to "n"; counts its calls.
class Increment : MemoryUpdater {
    val calls = AtomicInteger()
    override fun update(current: String): String {
        calls.incrementAndGet()
        val n = Regex("\"n\":(\\d+)").find(current)?.groupValues?.get(1)?.toInt() ?: 0
        return """{"n":${n + 1}}"""
    }
}

// Versions, compare-and-swap, an update through a Kotlin updater, and an updater that throws
// and writes nothing.
fun memory() {
    Store.memory().use { store ->
        check(store.memoryGet("agent:writer") == null) { "nothing yet" }
        val first = store.memoryPut("agent:writer", """{"tone":"warm"}""", expectedVersion = 0uL)
        check(first.version == 1uL && first.value == """{"tone":"warm"}""") { "$first" }
        val stale = raises<HandoffException.Conflict> { store.memoryPut("agent:writer", "{}", expectedVersion = 0uL) }
        check(stale.expectedVersion == 0uL && stale.actualVersion == 1uL) { "$stale" }
        check(store.memoryGet("agent:writer") == first) { "a stale write changes nothing" }
        check(store.memoryList(prefix = "agent:").map { it.scope } == listOf("agent:writer")) { "listed" }
        check(store.memoryDelete("agent:writer", expectedVersion = 1uL)) { "deleted" }

        val increment = Increment()
        store.memoryUpdate("shared", increment)
        val updated = store.memoryUpdate("shared", increment)
        check(updated.version == 2uL && updated.value == """{"n":2}""" && increment.calls.get() == 2) { "$updated" }
        val refused = raises<HandoffException.Foreign> {
            store.memoryUpdate("shared", object : MemoryUpdater {
                override fun update(current: String): String = throw IllegalStateException("the model said no")
            })
        }
        check(refused.description.contains("the model said no")) { refused.description }
        check(store.memoryGet("shared") == updated) { "a refused update writes nothing" }
    }
}

// Who owns a conversation: the sender until the work is taken, then its holder.
fun sessions() {
    Store.memory().use { store ->
        store.create(task().copy(fromAgent = "triage", toAgent = "billing", sessionId = "s1"))
        store.memoryPut("session:s1", """{"lang":"ko"}""")
        check(store.session("s1").currentAgent == "triage") { "the sender owns it" }
        store.claimNext("billing")
        val session = store.session("s1")
        check(session.currentAgent == "billing" && session.handoffChain.size == 1) { "$session" }
        check(session.context == """{"lang":"ko"}""") { session.context }
    }
}

// A short manager/worker run: the worker reports, the manager refines, the worker reports an
// error and the manager recovers, then escalates; a human resolves and the manager completes.
// Each message carries its typed body; a malformed report is refused by its field's name.
fun protocolRun() {
    Store.memory().use { store ->
        fun take(agent: String) = (store.claimNext(agent) ?: throw AssertionError("nothing for $agent")).reference()
        val init = store.initialize("task_12345", "manager", "worker", "Add token refresh",
            listOf("expired tokens are refreshed"), context = InitContext(relevantFiles = listOf("src/auth.js")))
        check(init.protocol?.handoffType == HandoffType.INITIALIZATION && init.toAgent == "worker") { "$init" }

        val worker = take("worker")
        val bad = raises<HandoffException.Validation> {
            store.report(worker, WorkerStatus.FAILED, filesModified = listOf(FileChange("src/auth.js", "")))
        }
        check(bad.problems.map { it.field } == listOf("files_modified[0].description", "issues")) { "${bad.problems}" }
        val review = store.report(worker, WorkerStatus.PARTIAL, accomplished = listOf("refresh on 401"),
            filesModified = listOf(FileChange("src/auth.js", "refresh on 401")),
            tests = Tests(added = 2u, passing = 2u), issues = listOf("no retries yet"))
        check(review.toAgent == "manager" && review.protocol?.workerReport?.status == WorkerStatus.PARTIAL) { "$review" }

        val refine = store.decide(take("manager"), Decision.REFINE, instructions = "Add retries")
        check(refine?.protocol?.iteration == 2u && refine?.protocol?.managerDecision == Decision.REFINE) { "$refine" }
        val error = store.reportError(take("worker"), ErrorType.DEPENDENCY, Severity.HIGH, "No retry hook")
        check(error.kind == HandoffKind.ERROR_RECOVERY && error.protocol?.errorReport?.severity == Severity.HIGH) { "$error" }
        val recovery = store.recover(take("manager"), "Wrap the client", listOf("write a wrapper"))
        check(recovery.protocol?.retryCount == 1u && recovery.toAgent == "worker") { "$recovery" }
        store.report(take("worker"), WorkerStatus.PARTIAL, issues = listOf("CI is flaky"))
        val escalation = store.escalate(take("manager"), Category.TECHNICAL, Severity.HIGH, Urgency.HIGH,
            BlockerType.ENVIRONMENT, "CI fails at random", "Nothing can be merged", "Fix the runners")
        check(escalation.toAgent == "human" && escalation.protocol?.escalationDetails?.blockerType == BlockerType.ENVIRONMENT) { "$escalation" }
        val outcomes = escalation.protocol?.completeHistory?.map { it.outcome }
        check(outcomes == listOf("refine", "error", "escalate")) { "$outcomes" }

        val resolved = store.resolve(take("human"), "Runners fixed")
        check(resolved.toAgent == "manager" && resolved.protocol?.resumeInstructions == "Runners fixed") { "$resolved" }
        check(store.decide(take("manager"), Decision.COMPLETE) == null) { "COMPLETE sends nothing" }

        val run = store.protocolRun("task_12345")
        check(run.phase == ProtocolPhase.COMPLETED && run.retryCount == 1u && run.escalations == 1u) { "$run" }
        val messages = store.protocolHistory("task_12345")
        check(messages.size == 8 && messages.all { handoffFromJson(handoffToJson(it)) == it }) { "$messages" }
        val stats = store.protocolStats()
        check(stats.runs == 1uL && stats.completed == 1uL && stats.escalationRate == 1.0) { "$stats" }
    }
}

// The seed's example conversation: decision points at seqs 2, 5 and 8, tool sequences 3-4,
// 6-7 and 8-9.
fun seedConversation(): List<ContextMessage> {
    fun say(role: String, content: String, call: String? = null, answers: String? = null) =
        ContextMessage(role = role, content = content, toolCalls = listOfNotNull(call), toolCallId = answers)
    fun call(id: String, name: String, arguments: String) = """{"id": "$id", "name": "$name", "arguments": $arguments}"""
    return listOf(
        say("user", "fix the auth bug"),
        say("assistant", "let me investigate..."),
        say("assistant", "", call("c1", "Read", """{"path": "auth.py"}""")),
        say("tool", "def check_token(t): ...", answers = "c1"),
        say("assistant", "found the issue: the expiry is compared in seconds"),
        say("assistant", "", call("c2", "Edit", """{"path": "auth.py"}""")),
        say("tool", "edited", answers = "c2"),
        say("assistant", "fixed, let me test", call("c3", "Bash", """{"cmd": "pytest"}""")),
        say("tool", "12 passed", answers = "c3"),
        say("assistant", "all tests pass"),
        say("user", "thanks"),
    )
}

// Takes the user's messages.
class UserTurns : DecisionJudge {
    override fun isDecision(index: ULong, message: ConversationMessage): Boolean = message.role == "user"
}

// Verifies the retries fact and the conversation, invalidates the other fact and throws on the
// one about time-outs.
class Reviewer : Verifier {
    override fun name() = "reviewer"
    override fun verify(item: VerifyItem): Score = when {
        "times out" in item.text -> throw IllegalStateException("the model timed out")
        item.kind == VerifyItemKind.CONVERSATION -> {
            check(item.messages.size == 11 && item.conversation?.id == item.id) { "$item" }
            Score(0.9, "a clean fix")
        }
        "retries" in item.text -> Score(0.95, "matches auth.py")
        else -> Score(0.1, "they last 15 minutes")
    }
}

// Curated memory: a conversation on an agent's branch, cherry-picks by range, by decision points
// (heuristics, a Kotlin judge) and tool sequences, facts verified with no verifier (the neutral
// 0.5) and with a Kotlin one (its throw reported, the item left as it was), two merges, the
// successor's packet and the curation log; bad input named, writing nothing.
fun curation() {
    Store.memory().use { store ->
        val branch = "task/fix-oauth/agent-b"
        val taskBranch = "task/fix-oauth"
        fun contents(c: Conversation) = store.messages(c.id).map { it.content }

        val source = store.addConversation(branch, seedConversation(), title = "OAuth refresh")
        check(source.taskId == "fix-oauth" && source.agent == "agent-b" && source.messageCount == 11uL) { "$source" }
        check(source.verificationStatus == Verdict.UNVERIFIED && store.getConversation(source.id) == source) { "$source" }
        val read = store.messages(source.id, fromSeq = 3uL, toSeq = 3uL).single()
        check(read.toolCalls.single().name == "Read" && read.toolCalls.single().arguments == """{"path":"auth.py"}""") { "$read" }

        val picked = store.cherryPick(source.id, taskBranch, fromSeq = 2uL, toSeq = 5uL, title = "the diagnosis")
        check(picked.branch == taskBranch && picked.messageCount == 4uL && picked.cherryPickedFrom == source.id) { "$picked" }
        val marked = store.messages(source.id).filter { it.isCherryPicked }
        check(marked.map { it.seq } == listOf(2uL, 3uL, 4uL, 5uL)) { "$marked" }
        check(marked.first().cherryPickedTo.single().conversationId == picked.id) { "${marked.first()}" }
        val decisions = store.cherryPickDecisions(source.id, taskBranch)
        check(contents(decisions) == listOf("let me investigate...", "found the issue: the expiry is compared in seconds",
            "fixed, let me test")) { "${contents(decisions)}" }
        val judged = store.cherryPickDecisions(source.id, taskBranch, UserTurns())
        check(contents(judged) == listOf("fix the auth bug", "thanks")) { "${contents(judged)}" }
        val tools = store.cherryPickTools(source.id, taskBranch)
        check(store.messages(tools.id).flatMap { it.toolCalls }.map { it.name } == listOf("Read", "Edit", "Bash")) { "tools" }

        val facts = store.addFacts(branch, listOf(
            NewFact("the refresh needs retries with backoff", confidence = 0.8, source = "auth.py"),
            NewFact("access tokens last a day"),
            NewFact("the model times out on this one"),
        ))
        check(facts.all { it.status == FactStatus.ACTIVE }) { "$facts" }
        val neutral = store.verify(branch)
        check(neutral.unverified == 4uL && neutral.verified == 0uL && neutral.items.all { it.score == 0.5 }) { "$neutral" }
        val report = store.verify(branch, Reviewer())
        check(report.verified == 2uL && report.invalidated == 1uL && report.failed == 1uL) { "$report" }
        val thrown = report.items.single { it.error != null }
        check(thrown.id == facts[2].id && thrown.error!!.contains("the model timed out")) { "$thrown" }
        val statuses = store.facts(branch).map { it.status }
        check(statuses == listOf(FactStatus.VERIFIED, FactStatus.INVALIDATED, FactStatus.ACTIVE)) { "$statuses" }
        check(store.facts(branch).first().verifiedBy == "reviewer") { "verified by" }

        val merged = store.merge(branch)
        check(merged == MergeReport(branch, taskBranch, facts = 1uL, conversations = 1uL, kept = 2uL)) { "$merged" }
        val again = store.merge(branch)
        check(again.facts == 0uL && again.conversations == 0uL) { "merging twice adds nothing: $again" }
        check(store.facts(taskBranch, FactStatus.VERIFIED).single().origin == facts[0].id) { "the copy's origin" }
        check(store.branches().map { it.name to it.parent } == listOf(taskBranch to "main", branch to taskBranch)) {
            "${store.branches()}"
        }

        val h = store.create(task("fix-oauth", "Ship the OAuth fix"))
        val packet = store.contextFor(h.id, budgetTokens = 4000uL)
        check("the refresh needs retries with backoff" in packet.markdown) { packet.markdown }
        check("access tokens last a day" !in packet.markdown) { "an invalidated fact is left out" }
        val short = store.contextFor(h.id, budgetChars = 300uL)
        check(short.unit == BudgetUnit.CHARS && short.markdown.length <= 300) { short.markdown }
        val zero = raises<HandoffException.Validation> { store.contextFor(h.id, budgetChars = 0uL) }
        check(zero.problems.single().field == "budget_chars") { "${zero.problems}" }
        val kinds = store.curationEvents("fix-oauth").map { it.kind }
        check(kinds.first() == CurationChange.CONVERSATION_ADDED && kinds.last() == CurationChange.MERGED &&
            CurationChange.CHERRY_PICKED in kinds && CurationChange.VERIFIED in kinds) { "$kinds" }

        val before = Triple(store.listConversations(), store.messages(source.id), store.curationEvents("fix-oauth"))
        val badBranch = raises<HandoffException.Validation> { store.addConversation("feature/x", seedConversation()) }
        check(badBranch.problems.map { it.field } == listOf("branch")) { "${badBranch.problems}" }
        val badRange = raises<HandoffException.Validation> { store.cherryPick(source.id, taskBranch, fromSeq = 9uL, toSeq = 12uL) }
        check(badRange.problems.map { it.field } == listOf("to_seq")) { "${badRange.problems}" }
        val refused = raises<HandoffException.Foreign> {
            store.cherryPickDecisions(source.id, taskBranch, object : DecisionJudge {
                override fun isDecision(index: ULong, message: ConversationMessage): Boolean =
                    throw IllegalStateException("the judge is unreachable")
            })
        }
        check(refused.description.contains("the judge is unreachable")) { refused.description }
        val after = Triple(store.listConversations(), store.messages(source.id), store.curationEvents("fix-oauth"))
        check(after == before) { "refused input changes nothing" }
    }
}

// Verifies the backoff fact and the conversation, leaves the lock fact in between and
// invalidates the one about token lifetimes.
class BundleReviewer : Verifier {
    override fun name() = "reviewer"
    override fun verify(item: VerifyItem): Score = when {
        item.kind == VerifyItemKind.CONVERSATION -> Score(0.8, "a clean fix")
        "backoff" in item.text -> Score(0.9, "matches auth.py")
        "lock" in item.text -> Score(0.5, null)
        else -> Score(0.1, "they last 15 minutes")
    }
}

// Knowledge bundles, replays and comparisons: task fix-oauth curated on agent-b's branch with a
// Kotlin verifier, packaged as a redacted team bundle (kb_ token; a private bundle's token says
// NotFound as a wrong one does), imported into a second store twice (the second adds nothing),
// hostile bundles refused with that store unchanged, the run replayed in order and compared
// with a rerun, and the bundle deleted while its import stays.
fun bundles(dir: String) {
    val clock = ManualClock()
    val second = Duration.ofSeconds(1)
    val key = "sk-proj-aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n"
    val backoff = "the refresh needs retries with backoff; the staging key was $key"
    val branch = "task/fix-oauth/agent-b"
    Store.memory(OpenOptions(clock = clock)).use { store ->
        Store.open("$dir/bundles-other.db").use { other ->
            val h = store.create(task("fix-oauth", "Fix the token refresh").copy(
                fromAgent = "agent-a", toAgent = "agent-b", decisions = listOf("retry with backoff")))
            clock.advance(second)
            val claim = store.claim(h.id, "agent-b")
            clock.advance(second)
            store.addConversation(branch, listOf(
                ContextMessage(role = "user", content = "fix the auth bug"),
                ContextMessage(role = "assistant", content = "let me retry the refresh with backoff"),
                ContextMessage(role = "assistant", content = "all tests pass"),
            ), title = "OAuth refresh")
            clock.advance(second)
            store.addFacts(branch, listOf(NewFact(backoff, source = "auth.py"),
                NewFact("the refresh may also need a lock"), NewFact("access tokens last a day")))
            clock.advance(second)
            val verified = store.verify(branch, BundleReviewer())
            check(verified.verified == 2uL && verified.unverified == 1uL && verified.invalidated == 1uL) { "$verified" }
            clock.advance(second)
            store.complete(claim.reference(), "refresh retried")
            clock.advance(second)

            val bundle = store.createBundle("OAuth2 Token Refresh Fix Playbook", taskId = "fix-oauth",
                visibility = Visibility.TEAM, tags = listOf("oauth"))
            val token = bundle.shareToken ?: error("a team bundle has a token")
            check(token.startsWith("kb_") && token.length >= 35) { "a kb_ token" }
            check(bundle.factCount == 1uL && bundle.conversationCount == 1uL && bundle.messageCount == 3uL) { "$bundle" }
            check(bundle.verificationStatus == BundleStatus.VERIFIED && bundle.verifiedBy == "reviewer") { "$bundle" }
            check(bundle.bundleType == BundleType.TASK_EXPORT && bundle.sourceBranch == "task/fix-oauth") { "$bundle" }
            check(key !in bundle.portableJson && "[REDACTED" in bundle.portableJson) { "the portable form is redacted" }
            check(bundle.portableJson.contains("\"content_hash\":\"${bundle.contentHash}\"")) { "hashed" }
            check(token !in bundle.toString() && "content_hash" !in bundle.toString()) { bundle.toString() }
            check(store.getBundle(bundle.id) == bundle && store.listBundles() == listOf(bundle)) { "found by id" }
            check(store.listBundles(Visibility.PUBLIC).isEmpty()) { "filtered by visibility" }

            check(store.bundleByToken(token) == bundle) { "a team bundle is found by its token" }
            clock.advance(second)
            val privateBundle = store.createBundle("private notes", taskId = "fix-oauth")
            check(privateBundle.visibility == Visibility.PRIVATE && privateBundle.shareToken == null) { "private by default, no token" }
            val shared = store.setVisibility(privateBundle.id, Visibility.TEAM).shareToken ?: error("shared, a token")
            check(store.setVisibility(privateBundle.id, Visibility.PRIVATE).shareToken == null) { "made private, no token" }
            val hidden = raises<HandoffException.NotFound> { store.bundleByToken(shared) }
            val wrong = raises<HandoffException.NotFound> { store.bundleByToken("kb_" + "0".repeat(64)) }
            check(hidden.description == wrong.description && hidden.id == wrong.id && hidden.what == wrong.what) {
                "a revoked token and a wrong one: ${hidden.description} / ${wrong.description}"
            }
            val publicBundle = store.setVisibility(privateBundle.id, Visibility.PUBLIC)
            val publicToken = publicBundle.shareToken ?: error("made public, a token")
            check(publicToken != shared && store.bundleByToken(publicToken) == publicBundle) { "made public, a new token" }

            val first = other.importBundle(bundle.portableJson)
            check(first == ImportReport(bundle.name, "main", 1uL, 0uL, 1uL, 0uL, 3uL, null, false)) { "$first" }
            val again = other.importBundle(bundle.portableJson, "main")
            check(again.factsAdded == 0uL && again.factsSkipped == 1uL && again.conversationsSkipped == 1uL) { "$again" }
            // Unsigned: the bundle's verdicts are its claim, kept, not this store's word.
            val imported = other.facts("main").single()
            check(imported.status == FactStatus.ACTIVE && key !in imported.text) { "$imported" }
            check(imported.score == 0.9 && imported.verifiedBy == "bundle:" + bundle.contentHash.take(23)) { "$imported" }
            check(other.listConversations().single().verificationStatus == Verdict.UNVERIFIED) { "claimed, not verified" }

            val before = Triple(other.facts("main"), other.listConversations(), other.curationEvents())
            fun refused(bundleJson: String) =
                raises<HandoffException.Validation> { other.importBundle(bundleJson) }.problems
            val tampered = bundle.portableJson.replace("all tests pass", "all tests fail")
            check(refused(tampered).map { it.field } == listOf("content_hash")) { "tampered" }
            val versioned = bundle.portableJson.replace("\"schema_version\":1", "\"schema_version\":99")
            check(versioned != bundle.portableJson && refused(versioned).single().field == "schema_version") { "versioned" }
            check(refused(bundle.portableJson.take(bundle.portableJson.length / 2)).any { "EOF" in it.rule }) { "truncated" }
            val deep = "{\"schema_version\": 1, \"name\": \"x\", \"task\": " + "[".repeat(100_000) + "]".repeat(100_000) + "}"
            check(refused(deep).single().field == "bundle") { "deeply nested" }
            check(Triple(other.facts("main"), other.listConversations(), other.curationEvents()) == before) {
                "hostile bundles change nothing"
            }

            val replay = store.replay("fix-oauth")
            val kinds = replay.timeline.map { it.kind }
            check(kinds == listOf("handoff.created", "handoff.claimed", "curation.conversation_added",
                "curation.facts_added", "curation.verified", "handoff.completed", "curation.bundle_created",
                "curation.bundle_created")) { "$kinds" }
            val times = replay.timeline.map { it.at }
            check(times == times.sorted()) { "ordered: $times" }
            check("\"outcome\":\"refresh retried\"" in replay.timeline[5].data) { replay.timeline[5].data }
            val agentB = replay.agents.single { it.agent == "agent-b" }
            check(agentB.claimed == 1uL && agentB.completed == 1uL && agentB.curated == 3uL) { "$agentB" }
            check(replay.agents.map { it.agent } == listOf("agent-a", "agent-b")) { "${replay.agents}" }
            check(replay.outcome.status == "completed" && replay.outcome.result == "refresh retried") { "${replay.outcome}" }
            check(replay.outcome.durationSeconds == 7.0) { "${replay.outcome}" }
            check(replay.keyFacts.map { it.text } == listOf(backoff, "the refresh may also need a lock")) { "key facts" }
            check(store.replay("fix-oauth", verifiedOnly = true).keyFacts.single().text == backoff) { "verified only" }

            store.create(task("fix-oauth-rerun", "Fix the token refresh").copy(fromAgent = "agent-a",
                toAgent = "agent-c", decisions = listOf("retry with backoff", "cache the token")))
            store.addFacts("task/fix-oauth-rerun/agent-c", listOf(NewFact("access tokens last an hour")))
            val compared = store.compare("fix-oauth", "fix-oauth-rerun")
            check(compared.agents == Overlap(listOf("agent-b"), listOf("agent-c"), listOf("agent-a"))) { "${compared.agents}" }
            check(compared.decisionPoints == Overlap(listOf(), listOf("cache the token"), listOf("retry with backoff"))) {
                "${compared.decisionPoints}"
            }
            check(compared.facts.onlyB == listOf("access tokens last an hour") && compared.facts.both.isEmpty()) { "${compared.facts}" }
            check(compared.outcomeA.status == "completed" && compared.outcomeB.status == "in_progress") { "$compared" }
            check(compared.timelineLengthA == 8uL && compared.timelineLengthB == 2uL) { "$compared" }
            raises<HandoffException.NotFound> { store.replay("no-such-task") }

            store.deleteBundle(bundle.id)
            raises<HandoffException.NotFound> { store.getBundle(bundle.id) }
            raises<HandoffException.NotFound> { store.bundleByToken(token) }
            check(store.listBundles() == listOf(publicBundle)) { "one bundle left" }
            check(other.facts("main").size == 1) { "what was imported stays" }
        }
    }
}

// Signed bundles: a key pair whose printing hides the secret key, a bundle signed with it and
// imported as its claim where the key is not trusted, verified where it is; a signature claimed
// for another key, bad keys and a public key given as the secret refused by name.
fun signedBundles() {
    val keys = generateBundleKey()
    val hexSecret = keys.secretKey.removePrefix("ed25519-secret:")
    check(keys.publicKey.startsWith("ed25519:") && hexSecret.length == 64) { "a key pair" }
    check(hexSecret !in keys.toString() && keys.publicKey in keys.toString()) { "printing hides the secret" }
    Store.memory().use { store ->
        Store.memory().use { other ->
            store.addFacts("task/t1", listOf(NewFact("the refresh needs retries with backoff")))
            store.verify("task/t1", BundleReviewer())
            val bundle = store.createBundle("playbook", taskId = "t1")
            val signed = store.signBundle(bundle.id, keys.secretKey)
            check(signed.contentHash == bundle.contentHash && "\"signature\"" in signed.portableJson) { "signed" }
            check(hexSecret !in signed.portableJson && hexSecret !in signed.toString()) { "the secret stays out" }

            val untrusted = other.importBundle(signed.portableJson)
            check(untrusted.signedBy == keys.publicKey && !untrusted.trusted) { "$untrusted" }
            check(other.facts("main").single().status == FactStatus.ACTIVE) { "untrusted: a claim" }

            check(other.trustBundleKeys().isEmpty()) { "nothing trusted yet" }
            val trusted = other.trustBundleKeys(trust = listOf(keys.publicKey)).single()
            check(trusted.publicKey == keys.publicKey) { "$trusted" }
            val report = other.importBundle(signed.portableJson, "task/rerun")
            check(report.signedBy == keys.publicKey && report.trusted && report.factsAdded == 1uL) { "$report" }
            val fact = other.facts("task/rerun").single()
            check(fact.status == FactStatus.VERIFIED && fact.verifiedBy!!.endsWith("signed by ${keys.publicKey}")) { "$fact" }
            check(other.trustBundleKeys(distrust = listOf(keys.publicKey)).isEmpty()) { "distrusted" }

            val claimed = signed.portableJson.replace(keys.publicKey, generateBundleKey().publicKey)
            val forged = raises<HandoffException.Validation> { other.importBundle(claimed, "task/claimed") }
            check(forged.problems.map { it.field } == listOf("signature")) { "${forged.problems}" }
            check(other.facts("task/claimed").isEmpty()) { "nothing written" }
            val bad = raises<HandoffException.Validation> {
                other.trustBundleKeys(trust = listOf(keys.secretKey, keys.publicKey), distrust = listOf("ssh-ed25519 AAAA"))
            }
            check(bad.problems.map { it.field } == listOf("trust[0]", "distrust[0]")) { "${bad.problems}" }
            check(other.trustBundleKeys().isEmpty()) { "nothing trusted" }
            val notSecret = raises<HandoffException.Validation> { store.signBundle(bundle.id, keys.publicKey) }
            check(notSecret.problems.map { it.field } == listOf("secret_key")) { "${notSecret.problems}" }
        }
    }
}

// Issue 19: a lease heartbeats while held and settles once; `use` closes it, and closing it
// unsettled (an exception inside `use`) fails the claim so the work goes back at once. The
// store's clock stands still, so no lease lapses: the heartbeats are polled for, with a
// generous deadline (a liveness bound, not a timing claim).
fun leases() {
    val dropped = "the holder stopped without completing or failing its claim" // the core's DROPPED
    fun until(what: String, done: () -> Boolean) {
        val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60)
        while (!done()) {
            check(System.nanoTime() < deadline) { "gave up waiting for $what" }
            Thread.sleep(5)
        }
    }
    fun settledTwice(block: () -> Unit) {
        val again = raises<HandoffException.Validation> { block() }
        check(again.problems.map { it.field } == listOf("lease")) { "${again.problems}" }
    }
    Store.memory(OpenOptions(clock = ManualClock())).use { store ->
        val lease = Duration.ofMillis(30)
        val h = store.create(task().copy(fromAgent = "planner"))
        val done = store.lease(store.claim(h.id, "coder", lease).reference()).use { held ->
            check(held.claim().handoffId == h.id) { "the claim held" }
            until("two heartbeats") { store.events(h.id).count { it.change is Change.Heartbeat } >= 2 }
            check(!held.isLost()) { "not lost" }
            val completed = held.complete("ported")
            settledTwice { held.complete("again") }
            settledTwice { held.fail("late") }
            completed
        }
        check(done.status == HandoffStatus.COMPLETED && done.outcome == "ported") { "$done" }
        check(store.events(h.id).last().change == Change.Completed("ported", null)) { "closing a settled lease changes nothing" }

        // An exception inside `use`: the lease is closed unsettled and the claim failed.
        val work = store.create(task())
        raises<IllegalStateException> {
            store.lease(store.claim(work.id, "coder", lease).reference()).use { error("the model refused") }
        }
        val back = store.get(work.id)
        check(back.status == HandoffStatus.PENDING && back.attempts == 1u) { "$back" }
        check(store.events(work.id).last().change == Change.AttemptFailed(1uL, dropped)) { "${store.events(work.id).last()}" }
        check(store.claimNext("reviewer")?.handoff?.id == work.id) { "back in the queue at once" }

        // A cancelled handoff: the heartbeats find the claim gone, and completing is LeaseLost.
        val cancelled = store.create(task().copy(fromAgent = "planner"))
        store.lease(store.claim(cancelled.id, "coder", lease).reference()).use { held ->
            store.cancel(cancelled.id, "planner")
            until("the claim to be found gone") { held.isLost() }
            raises<HandoffException.LeaseLost> { held.complete("done") }
            check(held.isLost()) { "still lost once settled" }
            settledTwice { held.fail("late") }
        }
        check(store.get(cancelled.id).status == HandoffStatus.CANCELLED) { "cancelled stays cancelled" }
    }
}

fun main(args: Array<String>) {
    val dir = kotlin.io.path.createTempDirectory("handoff-ffi-kotlin").toString()
    val tests = listOf<Pair<String, () -> Unit>>(
        "lifecycle" to ::lifecycle,
        "errors" to ::errors,
        "failures" to ::failures,
        "fencing" to ::fencing,
        "claim secrets" to ::claimSecrets,
        "operators" to { operators(dir) },
        "racing threads" to { racingThreads("$dir/race.db") },
        "context" to ::context,
        "swarm tools" to ::swarmTools,
        "first use" to { firstUse(dir) },
        "connect" to { connect(dir) },
        "tasks" to ::tasks,
        "bad plans and stale updates" to ::badPlansAndStaleUpdates,
        "memory" to ::memory,
        "sessions" to ::sessions,
        "protocol run" to ::protocolRun,
        "curation" to ::curation,
        "bundles, replay and compare" to { bundles(dir) },
        "signed bundles" to ::signedBundles,
        "leases" to ::leases,
        "panic becomes an exception" to ::panicBecomesAnException,
    )
    var failed = 0
    for ((name, test) in tests) {
        try {
            test(); println("ok   $name")
        } catch (e: Throwable) {
            failed++; println("FAIL $name: $e")
        }
    }
    println("${tests.size - failed} passed, $failed failed")
    if (failed > 0) exitProcess(1)
}
