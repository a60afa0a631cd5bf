package main

// The help texts. Each command's text is what 'distlock help CMD' and
// 'distlock CMD -h' print; docs/CLI.md says the same at more length.

const overviewHead = `distlock takes distributed locks from the shell, on Redis, etcd, PostgreSQL,
ZooKeeper, a distlock server or the embedded engine.

Usage:
  distlock COMMAND [flags] [arguments]

Commands:
`

const overviewTail = `
Start here (nothing to install):   distlock demo
Run the lock server:               distlock serve    (then open http://127.0.0.1:7420/)
One host runs the nightly job:     distlock run --wait 0 nightly-report -- ./report.sh

` + backendHelp + `
` + exitCodesHelp + `
Run 'distlock help COMMAND' (or 'distlock COMMAND -h') for a command's flags and examples.
`

const runHelp = `Usage: ` + runSynopsis + `

Runs COMMAND while holding the lock NAME, on every host that shares the lock
backend.

distlock waits up to --wait for the lock, then starts COMMAND in a process
group of its own, standard streams passed through, with three variables added
to its environment:
  DISTLOCK_NAME    the lock name
  DISTLOCK_FENCE   the fencing token of this grant: a decimal integer, higher
                   for every later grant of NAME. Send it with each write to
                   the resource you protect, and have the resource reject a
                   token lower than the highest it has seen.
  DISTLOCK_OWNER   the owner token of this grant

The lease renews itself every ttl/3 while COMMAND runs. If it is lost (the
backend did not confirm a renewal before the lease ran out, or the lock was deleted or
taken), distlock sends SIGTERM to COMMAND's whole process group, SIGKILL
--grace later, and exits 76. COMMAND is never restarted, and no process of its
group runs later than the lease's deadline plus --grace (plus at most 250ms
when distlock itself is stopped or hung: a guard process stops the group). SIGINT, SIGTERM,
SIGHUP, SIGUSR1 and SIGUSR2 sent to distlock are passed on to the group. The
lock is released when the group has exited.

Flags (before NAME, or after it up to -- or COMMAND):
  --ttl DURATION     time to live of the lease, renewed every ttl/3 (default 30s;
                     50ms to 24h). Loss is detected within one ttl.
  --wait DURATION    how long to wait for the lock, connecting included
                     (default 10s); 0 makes one attempt and exits 75 at
                     once if the lock is busy
  --fair             wait first-come, first-served across every process
  --grace DURATION   on lock loss, time between SIGTERM and SIGKILL (default 5s)
  --metadata TEXT    shown by 'distlock status' (default: host, pid and command)
  --backend URL        the backend (default: the environment; --redis too)
  -v, --verbose      report acquisition and release on standard error
  --also NAME2       take NAME2 too, all or nothing, with NAME (repeatable):
                     COMMAND starts only when every lock is held and is
                     stopped when any of them is lost. Sets that share names
                     never deadlock, in whatever order they list them. Each
                     name's variables are numbered in the order given:
                     DISTLOCK_NAME_1 (NAME), DISTLOCK_FENCE_1, DISTLOCK_OWNER_1,
                     DISTLOCK_NAME_2, ...; DISTLOCK_NAMES is their count.
                     Exclusive locks only.

Lock kinds (default: NAME is an exclusive lock):
  -n, --limit K      NAME is a semaphore of K permits (1 to 2^30-1): up to K
                     commands (counting weights) run at once. The limit is
                     stored with NAME and governs: another K is served under
                     the stored limit (distlock limit changes it).
  --weight W         take W of the semaphore's permits (default 1; needs --limit)
  --shared           take the read side of the reader-writer lock NAME: any
                     number of --shared commands run together
  --exclusive        take the write side of the reader-writer lock NAME: alone,
                     with no reader. Waiters are served in arrival order, so a
                     waiting writer is not starved by a stream of readers.
  Every backend keeps semaphores and reader-writer locks (Redis, etcd,
  PostgreSQL, a distlock server), but Redlock refuses a --limit above 1.
  Each holder's lease expires on its own, and DISTLOCK_FENCE is its own token.

Exit codes:
  COMMAND's own  COMMAND ran to completion (128+N: it was killed by signal N)
  64             usage error
  65             a key distlock did not write is at NAME's place (see distlock
                 leaks, then force-release it): the wait ends at once
  69             backend error: the lock backend is unreachable or failing
  75             lock busy: another owner held NAME until --wait expired
  76             the lock was lost while COMMAND ran: COMMAND was stopped; or
                 COMMAND finished, but NAME was no longer held at its release
  126, 127       COMMAND could not be executed, or was not found
  128+N          signal N (SIGINT, SIGTERM...) ended the wait for the lock:
                 COMMAND never started

Examples:
  # Only one host runs the nightly job; on the others it exits 75 at once.
  distlock run --wait 0 nightly-report -- ./report.sh

  # Deploys wait their turn for up to 10 minutes.
  distlock run --wait 10m --ttl 1m deploy-prod -- ./deploy.sh v1.2.3

  # The command passes its fencing token on to the resource.
  distlock run orders-sync -- sh -c 'sync-orders --fence "$DISTLOCK_FENCE"'

  # At most 4 exports at once; a big one takes 2 of the 4 permits.
  distlock run --limit 4 exports -- ./export.sh
  distlock run --limit 4 --weight 2 exports -- ./export.sh --full

  # Readers share the cache; a rebuild waits for them and excludes them.
  distlock run --shared cache -- ./read-cache.sh
  distlock run --exclusive cache -- ./rebuild-cache.sh

  # A NAME that begins with "-": a "--" before it, and one after it.
  distlock run --wait 0 -- -nightly -- ./report.sh
`

const acquireHelp = `Usage: distlock acquire [flags] NAME

Takes the lock NAME for a shell script and prints its owner token and fencing
token. The lease does NOT renew itself: the script extends it with
'distlock extend' before --ttl runs out, and releases it with
'distlock release'. (For a single command, 'distlock run' is simpler and stops
the command if the lock is lost.)

The output is shell assignments, ready for eval:
  DISTLOCK_NAME=NAME
  DISTLOCK_OWNER=<owner token>
  DISTLOCK_FENCE=<fencing token>
  DISTLOCK_TTL=<ttl>
or, with --json: {"name", "owner", "fence", "ttl_ms"}.

Flags:
  --ttl DURATION    time to live of the lock (default 30s; 50ms to 24h)
  --wait DURATION   how long to wait for the lock (default 10s); 0 = one attempt
  --fair            wait first-come, first-served across every process
  --metadata TEXT   shown by 'distlock status' (default: host and pid)
  --json            print JSON
  --backend URL       the backend (default: the environment; --redis too)

Exit codes: 0 acquired, 64 usage, 69 backend error, 75 lock busy.

Example:
  out=$(distlock acquire --ttl 5m --wait 1m migrate-db) || exit
  eval "$out"
  trap 'distlock release migrate-db "$DISTLOCK_OWNER"' EXIT
  ./migrate-step-1.sh --fence "$DISTLOCK_FENCE"
  distlock extend --ttl 5m migrate-db "$DISTLOCK_OWNER" || exit
  ./migrate-step-2.sh --fence "$DISTLOCK_FENCE"
`

const extendHelp = `Usage: distlock extend [flags] NAME OWNER

Sets the time to live of the lock NAME, held by OWNER (the owner token that
'distlock acquire' printed), to --ttl from now. It fails with exit code 76 if
OWNER does not hold NAME any more: stop the work the lock protects then.

Flags:
  --ttl DURATION   the new time to live (default 30s; 50ms to 24h)
  --json           print JSON: {"name", "owner", "fence", "ttl_ms"}
  --backend URL      the backend (default: the environment; --redis too)

Exit codes: 0 extended, 64 usage, 69 backend error, 76 not held by OWNER.

Example:
  distlock extend --ttl 5m migrate-db "$DISTLOCK_OWNER" || exit
`

const releaseHelp = `Usage: distlock release [flags] NAME OWNER

Releases the lock NAME held by OWNER (the owner token that 'distlock acquire'
printed), and wakes a waiter. To prove ownership it first extends the lock (to
5s), then releases it: if the release itself then fails, the lock still frees
itself within 5s.

Flags:
  --backend URL   the backend (default: the environment; --redis too)

Exit codes: 0 released, 64 usage, 69 backend error, 76 not held by OWNER
(it expired, was released already, or another owner holds it).

Example:
  distlock release migrate-db "$DISTLOCK_OWNER"
`

const statusHelp = `Usage: distlock status [flags] NAME

Shows the state of the lock NAME: free or held, and then by which owner, its
metadata and time left, the fencing token of the grant; the highest fencing
token minted for NAME (the high-water) and the number of waiters. For a
semaphore or a reader-writer lock: its kind (and limit, or mode: read or
write) and every holder with its weight (or mode), holds, time left, fencing
token and metadata. It changes nothing.

Flags:
  --json        print JSON: {"name", "held", "owner", "holds", "metadata",
                "ttl_ms" (-1: never expires), "fence", "high_water", "waiters"};
                a shared lock adds "kind", "limit", "mode" and "holders":
                [{"owner", "weight", "mode", "holds", "ttl_ms", "fence",
                "metadata"}]
  --backend URL   the backend (default: the environment; --redis too)

Exit codes: 0 (held or free), 64 usage, 69 backend error.

Example:
  distlock status nightly-report
`

const listHelp = `Usage: distlock list [flags] [PREFIX]

Lists the locks held, or those whose names start with PREFIX (a plain string,
not a pattern), as a table sorted by name: each lock's kind (mutex,
semaphore/LIMIT, rwlock) and one row per holder, with its weight (×W) or mode
(read, write). It walks the keys with SCAN (never
KEYS), so it does not block Redis; a lock taken or released during the walk
may or may not be listed.

Flags:
  --json        print a JSON array of the objects 'distlock status --json' prints
  --backend URL   the backend (default: the environment; --redis too)

Exit codes: 0, 64 usage, 69 backend error.

Examples:
  distlock list
  distlock list deploy-
`

const leaksHelp = `Usage: distlock leaks [flags] [PREFIX]

Finds lock keys that will not expire by themselves: keys of any type under the
distlock prefix (or, with PREFIX, under the locks whose names start with it)
that have no time to live, or one beyond --max-ttl. These are the deadlocks
that code taking a lock in two steps (SETNX, then EXPIRE) leaves behind when it
dies in between. Fencing high-water keys live 7 days by design and are
reported only beyond that. It walks the keys with SCAN (never KEYS) and
changes nothing. A semaphore's or reader-writer lock's holder whose time left
is beyond --max-ttl is reported too, with its owner and weight or mode; on a
distlock server, the listing's locks are checked the same way.

Flags:
  --max-ttl DURATION   the longest time to live a lock may have (default 24h)
  --json               print a JSON array: {"key", "name", "kind", "type",
                       "ttl_ms"}, and for a shared lock's holder "holder",
                       "weight" and "mode"
  --backend URL          the backend (default: the environment; --redis too)

Exit codes: 0 no leaks, 1 leaks found (so that cron can alert), 64 usage,
69 backend error.

Examples:
  distlock leaks
  distlock leaks --max-ttl 1h
  # then, once the holder is known dead:
  distlock force-release stuck-job
`

const forceReleaseHelp = `Usage: distlock force-release [flags] NAME

Frees the lock NAME whoever holds it, and wakes its waiters: a repair for a
lock whose holder is known to be dead, or a leaked key at the lock's place.
A semaphore or a reader-writer lock has every holder freed, or, with
--owner, only that one (the others keep theirs; the head of the queue is
woken if it now fits). It shows the holders it frees and asks for
confirmation on standard input unless --yes. A holder that is still alive
learns of it only at its next renewal (its lease is lost as "taken over"),
and may go on writing meanwhile: only fencing tokens protect the resource
then.

Flags:
  --owner OWNER  free only OWNER's hold (its owner token, as distlock status
                 and list show it); exit 76 when OWNER holds nothing of
                 NAME, which changes nothing
  -y, --yes      do not ask
  --backend URL    the backend (default: the environment; --redis too)

Exit codes: 0 released (or was not held), 1 not confirmed, 64 usage,
69 backend error, 76 OWNER holds nothing (--owner).

Examples:
  distlock force-release --yes stuck-job
  distlock force-release --owner 3f9c0d... workers
`

const limitHelp = `Usage: distlock limit [flags] NAME LIMIT

Sets the number of permits of the semaphore NAME to LIMIT (1 to 1073741823),
making the semaphore when it does not exist. The limit stored with NAME
governs every client, whatever limit it declares (distlock run --limit, a
Semaphore in Go, an HTTP acquire's "limit"): running clients and queued
waiters are served under the new limit at once, with no redeploy. A
smaller limit evicts no holder: new permits are granted once the holders fit
under it. Only the first declaration of a semaphore makes it with its limit;
this command is how to change it afterwards. Redlock keeps semaphores of
limit 1 only.

Flags:
  --json        print the semaphore as distlock status --json does
  --backend URL   the backend (default: the environment; --redis too)

Exit codes: 0 set, 64 usage (a bad LIMIT, NAME held as another kind of lock,
a backend that cannot keep the limit), 69 backend error.

Example:
  distlock limit exports 5
`

const demoHelp = `Usage: distlock demo

Shows fencing tokens at work, with nothing installed: several workers, each
with its own client on one embedded (in-process) engine, take turns on one
lock and append to a ledger that checks fencing tokens. One worker is paused
past the end of its lease and then writes anyway: the ledger rejects its stale
token. The demo then checks the tally: every accepted write is in the ledger
exactly once, with strictly increasing tokens.

Exit codes: 0 when the tally checks, 1 otherwise.

Example:
  go run ./cmd/distlock demo
`

const serveHelp = `Usage: distlock serve [flags]

Runs the distlock lock server: an HTTP/JSON API under /v1 (docs/API.md), a
live dashboard at / and Prometheus metrics at /metrics.

With no backend flag it runs on the embedded engine, with nothing installed:
this process is then the lock authority (like a single Redis), and its locks
die with it: no other server shares them. With --backend, --redis, --redlock,
--etcd or --postgres it keeps no lock state of its own, so several servers can run side
by side, and a client naming them all goes on through another when one dies.

Clients: the Go library with engine/remote, the other distlock commands with
DISTLOCK_SERVER=http://host:7420[,http://host2:7420] (and DISTLOCK_TOKEN), or
curl.

Flags:
  --listen HOST:PORT        address to listen on (default 127.0.0.1:7420)
  --backend URL             run on any backend by URL (redis://, redlock://,
                            etcd://, postgres://...; see docs/CLI.md)
  --redis URL               run on one Redis server (redis://host:6379)
  --redlock URL,URL,...     run on Redlock over N independent Redis nodes
  --etcd URL,URL,...        run on an etcd v3 cluster (ttls: whole seconds, at least 2s)
  --postgres URL            run on PostgreSQL (schema: $DISTLOCK_POSTGRES_SCHEMA or
                            distlock; make it first with 'distlock postgres init')
  --backend-id ID           name the shared backend (the same on every server of
                            it): clients naming several servers use only those
                            that report the same id (not on the embedded engine)
  --tokens-file PATH        require bearer tokens: ROLE:TOKEN entries, one a
                            line (roles: read, write, admin; tokens of at least
                            16 bytes). Default: $DISTLOCK_TOKENS, same format.
  --tls-cert PATH, --tls-key PATH
                            speak HTTPS with this certificate and key
  --insecure-public         allow a non-loopback --listen without tokens
  --max-waiters N           waiting requests in total (default 10000)
  --max-waiters-per-name N  waiting requests per lock name (default 1000)
  --max-wait DURATION       longest wait an acquire may ask for (default 10m)
  --read-timeout DURATION   how long a client may take to send a request's
                            headers, and then its body (default 10s)
  --shutdown-timeout DURATION
                            on SIGINT/SIGTERM, how long requests in progress
                            may take to finish (default 10s)

On SIGINT or SIGTERM the server stops accepting, answers waiting requests with
shutting_down (HTTP 503) and releases nothing: on Redis the clients' locks
stay theirs.

Exit codes: 0 stopped by a signal, 1 cannot listen, 64 usage, 69 the lock
backend unreachable.

Examples:
  distlock serve                                   # embedded, 127.0.0.1:7420
  distlock serve --redis redis://127.0.0.1:6379
  distlock serve --listen 0.0.0.0:7420 --tokens-file /etc/distlock/tokens \
      --tls-cert cert.pem --tls-key key.pem --redis redis://redis:6379
  curl -s -XPOST localhost:7420/v1/locks/deploy/acquire -d '{"ttl_ms":60000}'
`

const helpHelp = `Usage: distlock help [COMMAND]

Shows the list of commands, or the help of COMMAND.

Example:
  distlock help run
`

// helpFor returns the help text of a command.
const electHelp = `Usage: ` + electSynopsis + `

Campaigns for the election NAME and runs COMMAND only while this process is
the leader. Campaigners wait in the lock's queue, in arrival order; the leader
is the holder of the lock NAME, its value is shown by 'distlock leader'.

COMMAND starts in a process group of its own, with these in its environment:
  DISTLOCK_NAME    the election's name
  DISTLOCK_TERM    the term: a decimal integer, higher for every later leader.
                   Send it with each write the leader makes, and have the
                   resource reject a term lower than the highest it has seen:
                   a deposed leader's late writes are then refused.
  DISTLOCK_FENCE   the same number (as distlock run names it)
  DISTLOCK_OWNER   the owner token of the leadership

The leadership renews itself every ttl/3. If it is lost, distlock sends
SIGTERM to COMMAND's process group, SIGKILL --grace later, and campaigns
again (with --once it exits 76 instead). While this process runs, COMMAND is
never running when it is not the leader, except for the --grace it is given to
stop; a distlock process that is stopped (SIGSTOP, a paused VM) cannot stop
it, and it runs beside the next leader until distlock continues: have the
resource check DISTLOCK_TERM. When
COMMAND exits on its own, distlock resigns at once (the next campaigner is
elected) and exits with COMMAND's code.

Flags (before NAME, or after it up to -- or COMMAND):
  --value TEXT       the leader's value, shown to observers (default: host and pid)
  --ttl DURATION     the leadership's lease, renewed every ttl/3 (default 30s):
                     a dead leader is replaced within about one ttl
  --grace DURATION   on loss, time between SIGTERM and SIGKILL (default 5s)
  --once             do not campaign again after a loss
  --fair             strict arrival order among campaigners
  --backend URL        the backend (default: the environment; --redis too)
  -v, --verbose      report elections and resignations on standard error

Exit codes: COMMAND's own when it exits on its own, 64 usage, 69 backend error,
76 leadership lost with --once.

Example:
  distlock elect --value "$(hostname)" scheduler -- ./scheduler --term "$DISTLOCK_TERM"
`

const postgresHelp = `Usage: distlock postgres init [--backend URL]

Creates (or brings up to date) what the PostgreSQL backend needs in the
database that DISTLOCK_POSTGRES, DISTLOCK_URL=postgres://... or --backend
names: the schema that the other commands then use (the URL's ?schema=, else
DISTLOCK_POSTGRES_SCHEMA with DISTLOCK_POSTGRES, else distlock) with its
tables, sequences and functions, in one transaction. It is
idempotent and safe to run from several hosts at once. The other commands
never create anything: on a schema that was not made they say to run this.

Not in the light build (-tags lite).

Exit codes: 0 the schema is ready, 1 the init failed, 64 usage (this build has
no PostgreSQL), 69 PostgreSQL unreachable.

Example:
  export DISTLOCK_POSTGRES=postgres://app:secret@db:5432/app
  distlock postgres init
  distlock run nightly-report -- ./report.sh
`

const leaderHelp = `Usage: distlock leader [flags] NAME

Prints the leader of the election NAME: its value, term and lease time left.
Exits 0 when somebody leads, 1 when nobody does. With --watch it follows the
leader's changes (by notification, not polling) until interrupted, one line
per change; a slow terminal sees the latest state, never a stale one.

Flags:
  --watch, -w   follow the changes
  --json        one JSON object per line: {"name","elected","value","term","ttl_ms"}
  --backend URL   the backend (default: the environment; --redis too)

Exit codes: 0 somebody leads, 1 nobody does, 64 usage, 69 backend error.

Examples:
  distlock leader nightly-report
  distlock leader --watch --json nightly-report
`
