// A planner hands a task to a coder through handoff-core, from Kotlin (handoff-ffi).
// `make test` compiles it with the generated bindings and runs it:
//   java -Djna.library.path=target/debug -cp ... QuickstartKt [path/to/handoff.db]

import uniffi.handoff_ffi.*
import uniffi.handoff_ffi_core.*
import java.time.Duration

fun main(args: Array<String>) {
    val path = args.firstOrNull() ?: "handoff.db"
    Store.open(path).use { store ->
        // The planner's context window is 85% full: it hands over what it knows.
        val handoff = store.create(
            CreateOptions(
                taskId = "auth-142",
                goal = "Move sessions out of the controller",
                fromAgent = "planner",
                reason = HandoffReason.ContextLimit(85.toUByte()),
                completed = listOf("found the three session call sites"),
                pending = listOf("extract SessionStore", "tests"),
            ),
        )
        println("created ${handoff.id} for ${handoff.taskId}")

        // A coder takes the next open handoff; nobody else can while its lease runs. The claim's
        // secret proves it holds it: heartbeat and complete take the claim's reference.
        val claim = store.claimNext("coder", lease = Duration.ofSeconds(120)) ?: error("nothing to claim")
        println(handoffToMarkdown(claim.handoff).lines().first())
        store.heartbeat(claim.reference())
        val done = store.complete(claim.reference(), "SessionStore extracted, tests green")
        println("${done.status}: ${done.outcome}")
        println("chain: ${store.chain("auth-142").text}")

        try {
            store.get("no-such-handoff")
        } catch (e: HandoffException.NotFound) {
            println("as expected: ${e.description}")
        }
    }
}
