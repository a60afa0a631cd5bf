package postgres

import (
	"strconv"
	"time"

	"github.com/distlock/distlock/engine"
)

// statements are the engine's SQL, for its schema. Each is one function
// call: one round trip.
type statements struct {
	// acquire passes the engine's own channel (version 7); acquireV6
	// does not, for a schema of an earlier version.
	acquire, acquireV6, extend, release, forceRelease, leave string
	raiseFence, setMetadata, inspect, sweep                  string
	list, leaks, latchLeaks                                  string
	// The administration of shared locks (shared_admin.go).
	listShared, forceReleaseShared string

	// Shared locks (shared.go); extendBoth is extend and extend_shared in
	// one statement, for a batch with both.
	acquireShared, releaseShared, inspectShared, setLimit   string
	releaseSharedOnce                                       string
	leaveShared, raiseSharedFence, extendShared, extendBoth string

	// Sets of mutexes (multi.go); releaseMulti passes the grants' tokens
	// (version 19).
	acquireMulti, releaseMulti string

	// taken tells whether a force-release freed an owner's hold of a name
	// and its lease has not ended (Release's NotHeld made NotOwner).
	taken string

	// Version 11's signatures of extend, release, release_shared and
	// extend_shared, without the grants' tokens, for a schema before
	// version 12 (Engine.v11).
	extendV11, releaseV11, releaseSharedV11, extendSharedV11, extendBothV11 string

	// Version 13's signature of release_shared, without the kind, for a
	// schema before version 14 (Engine.v13).
	releaseSharedV13 string

	// Version 15's signature of set_metadata, without the grant's token,
	// for a schema before version 16 (Engine.v15).
	setMetadataV15 string
}

func newStatements(schema string) statements {
	s := quoteIdent(schema)
	return statements{
		acquire:      "SELECT * FROM " + s + ".acquire($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
		acquireV6:    "SELECT * FROM " + s + ".acquire($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
		extend:       "SELECT * FROM " + s + ".extend($1, $2, $3, $4, $5)",
		release:      "SELECT * FROM " + s + ".release($1, $2, $3, $4)",
		forceRelease: "SELECT " + s + ".force_release($1, $2)",
		leave:        "SELECT " + s + ".leave($1, $2)",
		raiseFence:   "SELECT " + s + ".raise_fence($1, $2, $3)",
		setMetadata:  "SELECT " + s + ".set_metadata($1, $2, $3, $4)",
		inspect:      "SELECT i.*, q.ids, q.us FROM " + s + ".inspect($1) i, " + queueOf(s, "waiters", "$1", "since"),
		sweep:        "SELECT " + s + ".sweep($1)",
		acquireMulti: "SELECT * FROM " + s + ".acquire_multi($1, $2, $3, $4, $5)",
		releaseMulti: "SELECT * FROM " + s + ".release_multi($1, $2, $3)",
		taken:        "SELECT " + s + "._taken($1, $2, clock_timestamp())",

		acquireShared:     "SELECT * FROM " + s + ".acquire_shared($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
		releaseShared:     "SELECT * FROM " + s + ".release_shared($1, $2, $3, $4)",
		releaseSharedOnce: "SELECT * FROM " + s + ".release_shared($1, $2, $3, $4, $5)",
		inspectShared:     "SELECT i.*, q.ids, q.us FROM " + s + ".inspect_shared($1) i, " + queueOf(s, "shared_waiters", "$1", ""),
		setLimit:          "SELECT " + s + ".set_limit($1, $2)",
		leaveShared:       "SELECT " + s + ".leave_shared($1, $2)",
		raiseSharedFence:  "SELECT " + s + ".raise_shared_fence($1, $2, $3)",
		extendShared:      "SELECT * FROM " + s + ".extend_shared($1, $2, $3, $4, $5)",
		// The mutexes' rows first, then the shared locks' (every batch
		// locks rows in this order), answers numbered as one batch.
		extendBoth: "SELECT * FROM " + s + ".extend($1, $2, $3, $4, $5) UNION ALL " +
			"SELECT o_i + cardinality($1::text[]), o_status, o_token, o_wake FROM " + s + ".extend_shared($6, $7, $8, $9, $10)",

		extendV11:        "SELECT * FROM " + s + ".extend($1, $2, $3, $4)",
		releaseV11:       "SELECT * FROM " + s + ".release($1, $2, $3)",
		releaseSharedV11: "SELECT * FROM " + s + ".release_shared($1, $2)",
		releaseSharedV13: "SELECT * FROM " + s + ".release_shared($1, $2, $3)",
		setMetadataV15:   "SELECT " + s + ".set_metadata($1, $2, $3)",
		extendSharedV11:  "SELECT * FROM " + s + ".extend_shared($1, $2, $3, $4)",
		extendBothV11: "SELECT * FROM " + s + ".extend($1, $2, $3, $4) UNION ALL " +
			"SELECT o_i + cardinality($1::text[]), o_status, o_token, o_wake FROM " + s + ".extend_shared($5, $6, $7, $8)",
		list: `SELECT k.name, k.owner, k.holds, k.metadata, k.token, ` + s + `._us(k.expires_at - clock_timestamp()), k.high_water,
  (SELECT count(*)::integer FROM ` + s + `.waiters w WHERE w.name = k.name AND w.deadline > clock_timestamp()), q.ids, q.us
FROM ` + s + `.locks k, ` + queueOf(s, "waiters", "k.name", "since") + `
WHERE k.owner IS NOT NULL AND k.expires_at > clock_timestamp() AND starts_with(k.name, $1) AND k.name > $2
ORDER BY k.name LIMIT $3`,
		listShared: `SELECT s.name FROM ` + s + `.shared s
WHERE starts_with(s.name, $1) AND s.name > $2
  AND (EXISTS (SELECT 1 FROM ` + s + `.shared_holders h WHERE h.name = s.name AND h.expires_at > clock_timestamp())
    OR EXISTS (SELECT 1 FROM ` + s + `.shared_waiters w WHERE w.name = s.name AND w.deadline > clock_timestamp()))
ORDER BY s.name LIMIT $3`,
		forceReleaseShared: "SELECT " + s + ".force_release_shared($1, $2)",
		// A lease distlock never makes: no expiry, or one beyond maxTTL,
		// of a mutex (locks) or of a shared lock's holder (shared_holders),
		// one row per name (the latest end; -1 when one has none).
		leaks: `SELECT x.name, CASE WHEN bool_or(x.expires_at IS NULL) THEN -1 ELSE ` + s + `._us(max(x.expires_at) - clock_timestamp()) END
FROM (SELECT k.name, k.expires_at FROM ` + s + `.locks k
    WHERE k.owner IS NOT NULL AND (k.expires_at IS NULL OR k.expires_at > clock_timestamp() + $3 * interval '1 microsecond')
      AND starts_with(k.name, $1) AND k.name > $2
  UNION ALL
  SELECT h.name, h.expires_at FROM ` + s + `.shared_holders h
    WHERE h.expires_at > clock_timestamp() + $3 * interval '1 microsecond'
      AND starts_with(h.name, $1) AND h.name > $2) x
GROUP BY x.name
ORDER BY x.name LIMIT $4`,
		// A countdown latch still counting: no expiry by design (it goes
		// when its count reaches zero).
		latchLeaks: `SELECT name FROM ` + s + `.latches WHERE starts_with(name, $1) AND name > $2 ORDER BY name LIMIT $3`,
	}
}

// queueOf is a LATERAL subquery q(ids, us) of the live waiters of the name
// nameExpr in table (waiters or shared_waiters), in arrival order, at most
// engine.MaxQueueListed of them: their ids, and their time in the queue in
// µs from the column since (-1 when the table keeps none), for
// engine.Info.Queue.
func queueOf(s, table, nameExpr, since string) string {
	us := "-1::bigint"
	if since != "" {
		us = s + "._us(clock_timestamp() - w." + since + ")"
	}
	return `LATERAL (SELECT coalesce(array_agg(x.waiter ORDER BY x.ticket), '{}'), coalesce(array_agg(x.us ORDER BY x.ticket), '{}')
  FROM (SELECT w.waiter, w.ticket, ` + us + ` AS us FROM ` + s + `.` + table + ` w
    WHERE w.name = ` + nameExpr + ` AND w.deadline > clock_timestamp() ORDER BY w.ticket LIMIT ` + strconv.Itoa(engine.MaxQueueListed) + `) x) q(ids, us)`
}

// queueList turns queueOf's columns into an engine.Info.Queue (nil when
// nobody waits).
func queueList(ids []string, us []int64) []engine.Waiter {
	var q []engine.Waiter
	for i, id := range ids {
		var waited time.Duration
		if i < len(us) && us[i] > 0 {
			waited = time.Duration(us[i]) * time.Microsecond
		}
		q = append(q, engine.Waiter{ID: id, Waited: waited})
	}
	return q
}
