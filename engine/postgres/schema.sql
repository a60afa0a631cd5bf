-- The distlock schema (see docs/POSTGRES.md), installed by Migrate. The
-- Go side fills in {{S}} (the schema, a quoted identifier), {{CHAN}} (the
-- schema's notification channel, a string literal), {{TOKENS}} and
-- {{TICKETS}} (its sequences' names, string literals), {{RESERVE_US}}
-- (engine.ReserveTTL) and {{STARVE_US}} (engine.StarvationBound), both in
-- microseconds. Every statement is idempotent: Migrate may run again.
--
-- Invariants the functions keep (every change to a name's rows is made
-- while holding its row of locks FOR UPDATE, so each function is one
-- atomic step per name, without advisory locks; a shared lock's grant
-- holds that row FOR KEY SHARE and its row of shared FOR UPDATE):
--   * a name has a row in locks while it is held, while anyone queues for
--     it, and while its high_water is above the token sequence (after a
--     quorum raised it); otherwise its release deletes the row. A shared
--     lock's grant makes a free row when there is none (kept until Sweep);
--   * a grant's token is max(a value of the tokens sequence, the name's
--     high-waters + 1), fixed while the grant holds the name's row of
--     locks (the mutex's FOR UPDATE or its insert, a shared lock's FOR KEY
--     SHARE), from a value drawn after the row was won or not overtaken
--     since (the sequence's last value is still it): it is above every
--     earlier grant's of the name, of either kind, even when the backend
--     stalled before its insert (the sequence must keep CACHE 1);
--   * a mutex is granted only while no shared lock's holder holds the
--     name, and a shared lock only while no mutex does, each checked while
--     holding the name's row of locks as above;
--   * every time is clock_timestamp() read after the row was locked: one
--     database clock judges every expiry.

CREATE SCHEMA IF NOT EXISTS {{S}};

CREATE SEQUENCE IF NOT EXISTS {{S}}.tokens;
CREATE SEQUENCE IF NOT EXISTS {{S}}.tickets;

CREATE TABLE IF NOT EXISTS {{S}}.locks (
  name           text COLLATE "C" PRIMARY KEY,
  owner          text,               -- NULL: free
  holds          integer NOT NULL DEFAULT 0,
  token          bigint NOT NULL DEFAULT 0,
  metadata       text NOT NULL DEFAULT '',
  attempt        text,               -- the Acquire call of the last grant or re-entry
  release_id     text,               -- a ReleaseOnce id, as versions before 21 recorded it
  release_ids    text[],             -- the last ReleaseOnce ids (_noted_release; version 21)
  expires_at     timestamptz,        -- the lease's end
  high_water     bigint NOT NULL DEFAULT 0,
  marked         boolean NOT NULL DEFAULT false, -- its release must wake someone
  reserved_for   text,               -- the waiter the free lock is kept for
  reserved_until timestamptz
);

CREATE TABLE IF NOT EXISTS {{S}}.waiters (
  name       text COLLATE "C" NOT NULL,
  waiter     text NOT NULL,
  ticket     bigint NOT NULL,        -- arrival order
  deadline   timestamptz NOT NULL,   -- heartbeat deadline
  since      timestamptz NOT NULL,   -- entered the queue
  fair       boolean NOT NULL,
  no_reserve boolean NOT NULL,
  chan       text,                   -- the waiter's engine's own channel (NULL: the schema's)
  PRIMARY KEY (name, waiter)
);
CREATE INDEX IF NOT EXISTS waiters_order ON {{S}}.waiters (name, ticket);
ALTER TABLE {{S}}.waiters ADD COLUMN IF NOT EXISTS chan text; -- version 7
ALTER TABLE {{S}}.locks ADD COLUMN IF NOT EXISTS release_ids text[]; -- version 21

-- The high-water marks of pgfence's HighestSeen mode: the resource's side.
-- granted (version 14) is the name's grant high-water that the deletion of
-- its row of locks (_forget) or of shared (sweep) would otherwise forget:
-- kept for the names that have a mark, so that a release does not let an
-- older token back in.
CREATE TABLE IF NOT EXISTS {{S}}.fence_marks (
  name    text COLLATE "C" PRIMARY KEY,
  token   bigint NOT NULL,
  holder  text NOT NULL,
  granted bigint NOT NULL DEFAULT 0
);
ALTER TABLE {{S}}.fence_marks ADD COLUMN IF NOT EXISTS granted bigint NOT NULL DEFAULT 0; -- version 14

CREATE TABLE IF NOT EXISTS {{S}}.version (
  version integer NOT NULL
);

-- The holders a force-release freed, of either kind, until their lease
-- would have ended: meanwhile a renewal of that owner that finds no hold
-- is answered 3, held by another owner (taken over), a resent one too.
-- Each force-release of the name deletes its rows past their end, and
-- sweep every row past its end.
CREATE TABLE IF NOT EXISTS {{S}}.taken (
  name    text COLLATE "C" NOT NULL,
  owner   text NOT NULL,
  until   timestamptz NOT NULL,        -- the freed lease's end
  PRIMARY KEY (name, owner)
);

-- _mark_taken marks p_owner's hold of name freed until p_until, and
-- deletes the name's marks past their end.
CREATE OR REPLACE FUNCTION {{S}}._mark_taken(p_name text, p_owner text, p_until timestamptz, now_ timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{S}}.taken WHERE name = p_name AND until <= now_;
  INSERT INTO {{S}}.taken (name, owner, until) VALUES (p_name, p_owner, p_until)
  ON CONFLICT (name, owner) DO UPDATE SET until = excluded.until;
END $$;

-- _taken tells whether p_owner's hold of name was freed by a force-release
-- and its lease would not have ended by now_.
CREATE OR REPLACE FUNCTION {{S}}._taken(p_name text, p_owner text, now_ timestamptz) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM {{S}}.taken t WHERE t.name = p_name AND t.owner = p_owner AND t.until > now_)
$$;

CREATE OR REPLACE FUNCTION {{S}}._us(i interval) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT (extract(epoch FROM i) * 1000000)::bigint $$;

-- _live reports whether l is a lease in force at now_ (a row without an
-- expiry, which distlock never writes, counts as free; Leaks reports it).
CREATE OR REPLACE FUNCTION {{S}}._live(l {{S}}.locks, now_ timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(l.owner IS NOT NULL AND l.expires_at > now_, false) $$;

-- _hold_expiry is the expiry an acquire or extension sets on an owner's
-- holds (holds after it) that now expire at cur, asking for next: next
-- with one hold (a lone lease's extension may shorten it), never earlier
-- than cur with more (engine.HoldExpiry: no hold's lease outlives them).
CREATE OR REPLACE FUNCTION {{S}}._hold_expiry(holds integer, cur timestamptz, next timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN holds > 1 THEN greatest(cur, next) ELSE next END $$;

-- _released reports whether the release call p_id counted a hold down: one
-- of the hold's last release ids (p_ids: release_ids), or the one id a
-- version before 21 recorded (p_old: release_id). An empty id is none.
CREATE OR REPLACE FUNCTION {{S}}._released(p_old text, p_ids text[], p_id text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$ SELECT p_id <> '' AND coalesce(p_old = p_id OR p_id = ANY(p_ids), false) $$;

-- _noted_release returns a hold's release ids with p_id the newest, the
-- oldest dropped past 8 (engine.KeptReleaseIDs), p_old (release_id, a
-- version before 21's) the oldest; a release without an id (p_id '')
-- leaves them as they are.
CREATE OR REPLACE FUNCTION {{S}}._noted_release(p_old text, p_ids text[], p_id text) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_id = '' THEN p_ids ELSE ids[greatest(1, cardinality(ids) - 7):] END
    FROM (SELECT CASE WHEN p_old IS NULL THEN '{}'::text[] ELSE ARRAY[p_old] END
                 || coalesce(p_ids, '{}'::text[]) || ARRAY[p_id] AS ids) s $$;

-- _notify sends msg about name on the schema's channel: '<md5 of name> msg'.
CREATE OR REPLACE FUNCTION {{S}}._notify(p_name text, msg text) RETURNS void
LANGUAGE sql AS $$ SELECT pg_notify({{CHAN}}, md5(p_name) || ' ' || msg) $$;

-- _notify_waiter wakes waiter w of name: on the channel its engine
-- listens on alone (ch, when it gave one), so that no other engine's
-- listener receives it; else on the schema's channel.
CREATE OR REPLACE FUNCTION {{S}}._notify_waiter(p_name text, w text, ch text) RETURNS void
LANGUAGE sql AS $$ SELECT pg_notify(coalesce(ch, {{CHAN}}), md5(p_name) || ' w:' || w) $$;

-- _remove takes waiter w out of name's queue (and its reservation).
CREATE OR REPLACE FUNCTION {{S}}._remove(p_name text, w text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{S}}.waiters WHERE name = p_name AND waiter = w;
  UPDATE {{S}}.locks SET reserved_for = NULL, reserved_until = NULL
   WHERE name = p_name AND reserved_for = w;
END $$;

-- _settle drops a lapsed reservation's waiter and the waiters whose
-- heartbeat deadline passed.
CREATE OR REPLACE FUNCTION {{S}}._settle(p_name text, now_ timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM {{S}}._settle_for(p_name, now_, NULL);
END $$;

-- _settle_for is _settle for a call of waiter p_self (NULL: of nobody in
-- the queue): a lapsed reservation for p_self itself is kept (version 8).
-- A reservation's lapse is applied by the next call on the name; when
-- that call is the reserved head's own acquire, nobody has been served
-- since the release and the head is still first in the queue, so it is
-- granted instead of being sent to the back behind everybody who queued
-- meanwhile (each of whom would then wait for one more wake-up).
CREATE OR REPLACE FUNCTION {{S}}._settle_for(p_name text, now_ timestamptz, p_self text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  rv text;
  ru timestamptz;
BEGIN
  SELECT reserved_for, reserved_until INTO rv, ru FROM {{S}}.locks WHERE name = p_name;
  IF rv IS NOT NULL AND now_ >= ru AND rv IS DISTINCT FROM p_self THEN
    PERFORM {{S}}._remove(p_name, rv);
    rv := NULL;
  END IF;
  DELETE FROM {{S}}.waiters WHERE name = p_name AND deadline <= now_;
  IF rv IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {{S}}.waiters WHERE name = p_name AND waiter = rv) THEN
    UPDATE {{S}}.locks SET reserved_for = NULL, reserved_until = NULL WHERE name = p_name;
  END IF;
END $$;

-- _head returns the first waiter of name's queue (NULL when none).
-- The helpers the functions call on every grant, release or queue entry
-- (_head, _enqueue, _lock) are plpgsql since version 7: a plpgsql body's
-- plans are kept by the session, where a SQL function that cannot be
-- inlined is parsed and planned again in every transaction that calls it.
CREATE OR REPLACE FUNCTION {{S}}._head(p_name text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT waiter FROM {{S}}.waiters WHERE name = p_name ORDER BY ticket LIMIT 1);
END $$;

-- _enqueue puts waiter w at the back of name's queue (or leaves it where
-- it is) with a heartbeat deadline ttl µs from now; ch is the channel its
-- wake-ups go to (NULL: the schema's).
DROP FUNCTION IF EXISTS {{S}}._enqueue(text, text, bigint, boolean, boolean, timestamptz); -- version 6's
CREATE OR REPLACE FUNCTION {{S}}._enqueue(p_name text, w text, ttl_us bigint, p_fair boolean, p_no_reserve boolean, now_ timestamptz, ch text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {{S}}.waiters AS q (name, waiter, ticket, deadline, since, fair, no_reserve, chan)
  VALUES (p_name, w, nextval({{TICKETS}}), now_ + ttl_us * interval '1 microsecond', now_, p_fair, p_no_reserve, ch)
  ON CONFLICT (name, waiter) DO UPDATE
    SET deadline = EXCLUDED.deadline, fair = q.fair OR EXCLUDED.fair, no_reserve = q.no_reserve OR EXCLUDED.no_reserve,
        chan = EXCLUDED.chan;
END $$;

-- _wake runs when name's lock is free: it reserves the lock for the head
-- when the head is fair or has waited the starvation bound (unless it is
-- never reserved for), and wakes the head when it reserved or when wake is
-- true (a release). Nothing when the lock is reserved already.
CREATE OR REPLACE FUNCTION {{S}}._wake(p_name text, now_ timestamptz, wake boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  h {{S}}.waiters;
  due boolean;
BEGIN
  IF EXISTS (SELECT 1 FROM {{S}}.locks WHERE name = p_name AND reserved_for IS NOT NULL) THEN
    RETURN;
  END IF;
  SELECT * INTO h FROM {{S}}.waiters WHERE name = p_name ORDER BY ticket LIMIT 1;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  due := h.fair OR (NOT h.no_reserve AND {{S}}._us(now_ - h.since) >= {{STARVE_US}});
  IF due THEN
    UPDATE {{S}}.locks SET reserved_for = h.waiter,
      reserved_until = now_ + {{RESERVE_US}} * interval '1 microsecond'
     WHERE name = p_name;
  END IF;
  IF due OR wake THEN
    PERFORM {{S}}._notify_waiter(p_name, h.waiter, h.chan);
  END IF;
END $$;

-- _lock returns name's row locked FOR UPDATE, or a row of NULLs (name
-- NULL) when it has none.
CREATE OR REPLACE FUNCTION {{S}}._lock(p_name text) RETURNS {{S}}.locks
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.locks;
BEGIN
  SELECT * INTO l FROM {{S}}.locks WHERE name = p_name FOR UPDATE;
  RETURN l;
END $$;

-- _forget deletes name's row of locks, which the caller holds, when its
-- high-water is not above the token sequence, and reports whether it did;
-- the row's high-water then goes to the name's shared row, if it has one
-- (version 9), so that Inspect's HighWater stays at the name's last token
-- while the shared lock's row is kept (without it, the shared lock's older
-- high-water showed), and to the name's pgfence mark, if it has one
-- (version 14: fence_marks.granted), so that HighestSeen still refuses the
-- tokens below it. The tokens do not need it: the next one is drawn from
-- the sequence, above it.
CREATE OR REPLACE FUNCTION {{S}}._forget(p_name text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  hw bigint;
BEGIN
  DELETE FROM {{S}}.locks WHERE name = p_name
     AND high_water <= (SELECT last_value FROM {{S}}.tokens)
  RETURNING high_water INTO hw;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  UPDATE {{S}}.shared SET high_water = hw WHERE name = p_name AND high_water < hw;
  UPDATE {{S}}.fence_marks SET granted = hw WHERE name = p_name AND granted < hw;
  RETURN true;
END $$;

-- _free frees name's locked row l at now_: wakes the head of its queue
-- (reserving when due) when it was marked or anyone queues, or everyone
-- waiting outside a queue when nobody queues; then deletes the row unless
-- it must stay (waiters, a raised high-water). force: wake even unmarked.
CREATE OR REPLACE FUNCTION {{S}}._free(l {{S}}.locks, now_ timestamptz, force boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM {{S}}.waiters WHERE name = l.name) THEN
    UPDATE {{S}}.locks SET owner = NULL, holds = 0, metadata = '', attempt = NULL, release_id = NULL, release_ids = NULL,
      expires_at = NULL, marked = false
     WHERE name = l.name;
    PERFORM {{S}}._settle(l.name, now_);
    PERFORM {{S}}._wake(l.name, now_, true);
    IF EXISTS (SELECT 1 FROM {{S}}.waiters WHERE name = l.name) THEN
      -- The head is woken on its engine's channel; the name's plain
      -- subscribers (an election's observers) read the lock again
      -- ('handed': not for waiters, who wait for their own wake-up).
      PERFORM {{S}}._notify(l.name, 'handed');
      RETURN;
    END IF;
  END IF;
  IF l.marked OR force THEN
    PERFORM {{S}}._notify(l.name, 'released');
  END IF;
  IF NOT {{S}}._forget(l.name) THEN
    UPDATE {{S}}.locks SET owner = NULL, holds = 0, metadata = '', attempt = NULL, release_id = NULL, release_ids = NULL,
      expires_at = NULL, marked = false, reserved_for = NULL, reserved_until = NULL
     WHERE name = l.name;
  END IF;
END $$;

-- acquire grants name to p_owner (see engine.Engine.Acquire and
-- engine.Queuer): one call, one round trip. p_chan is the channel the
-- caller's engine listens on alone: a waiter's wake-ups go there (NULL:
-- on the schema's channel, as version 6's acquire without it, below).
CREATE OR REPLACE FUNCTION {{S}}.acquire(
  p_name text, p_owner text, p_ttl_us bigint, p_metadata text, p_attempt text,
  p_waiting boolean, p_waiter text, p_waiter_ttl_us bigint, p_fair boolean,
  p_behind boolean, p_no_reserve boolean, p_announce boolean, p_chan text,
  OUT o_acquired boolean, OUT o_token bigint, OUT o_holds integer, OUT o_holder text,
  OUT o_holder_ttl_us bigint, OUT o_queued boolean, OUT o_head boolean, OUT o_reserved boolean)
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.locks;
  now_ timestamptz;
  live boolean;
  queued boolean;
  rv text;
  ru timestamptz;
  h text;
  behind boolean := false;
  tok bigint;
  shared_hw bigint;
BEGIN
  o_acquired := false; o_token := 0; o_holds := 0; o_holder := ''; o_holder_ttl_us := 0;
  o_queued := false; o_head := false; o_reserved := false;
  LOOP
    -- A name without a row is free and nobody queues for it: the common
    -- grant is this insert, with a token drawn before it had the row.
    WITH t AS (SELECT nextval({{TOKENS}}) AS v)
    INSERT INTO {{S}}.locks (name, owner, holds, token, metadata, attempt, expires_at, high_water, marked)
    SELECT p_name, p_owner, 1, t.v, p_metadata, p_attempt,
           clock_timestamp() + p_ttl_us * interval '1 microsecond', t.v, p_announce
      FROM t
    ON CONFLICT (name) DO NOTHING
    RETURNING token INTO tok;
    IF FOUND THEN
      shared_hw := {{S}}._mutex_check(p_name, clock_timestamp());
      -- The row is won. The token stands only if no token was drawn since
      -- (a grant made while this backend stalled before its insert drew a
      -- larger one, and its row may be gone): else draw one now.
      IF tok <> (SELECT last_value FROM {{S}}.tokens) OR tok <= shared_hw THEN
        tok := greatest(nextval({{TOKENS}}), shared_hw + 1);
        UPDATE {{S}}.locks SET token = tok, high_water = tok WHERE name = p_name;
      END IF;
      IF p_announce THEN
        PERFORM {{S}}._notify(p_name, 'announced');
      END IF;
      o_acquired := true; o_token := tok; o_holds := 1;
      RETURN;
    END IF;
    l := {{S}}._lock(p_name);
    EXIT WHEN l.name IS NOT NULL; -- else deleted meanwhile: insert again
  END LOOP;
  now_ := clock_timestamp();
  shared_hw := {{S}}._mutex_check(p_name, now_);
  live := {{S}}._live(l, now_);

  IF live AND l.owner <> p_owner THEN
    IF p_waiting AND NOT l.marked THEN
      UPDATE {{S}}.locks SET marked = true WHERE name = p_name;
    END IF;
    o_holder := l.owner;
    o_holder_ttl_us := {{S}}._us(l.expires_at - now_);
    IF p_waiter <> '' THEN
      PERFORM {{S}}._settle(p_name, now_);
      PERFORM {{S}}._enqueue(p_name, p_waiter, p_waiter_ttl_us, p_fair, p_no_reserve, now_, p_chan);
      o_queued := true;
      o_head := {{S}}._head(p_name) = p_waiter;
    END IF;
    RETURN;
  END IF;

  queued := EXISTS (SELECT 1 FROM {{S}}.waiters WHERE name = p_name);
  IF queued THEN
    -- The free lock's reserved head asking itself keeps its reservation,
    -- even past its end (_settle_for).
    PERFORM {{S}}._settle_for(p_name, now_, CASE WHEN NOT live THEN nullif(p_waiter, '') END);
    IF NOT live THEN
      SELECT reserved_for, reserved_until INTO rv, ru FROM {{S}}.locks WHERE name = p_name;
      h := {{S}}._head(p_name);
      IF rv IS NULL AND h IS NOT NULL AND h <> p_waiter AND
         (p_fair OR p_behind OR (SELECT fair FROM {{S}}.waiters WHERE name = p_name AND waiter = h)) THEN
        -- A fair head (or a fair or polite newcomer): the lock waits for
        -- the head, which is woken (and the lock reserved when it is due).
        PERFORM {{S}}._wake(p_name, now_, true);
        SELECT reserved_for, reserved_until INTO rv, ru FROM {{S}}.locks WHERE name = p_name;
        behind := true;
      END IF;
      IF behind OR (rv IS NOT NULL AND rv <> p_waiter) THEN
        o_reserved := true;
        o_holder_ttl_us := {{RESERVE_US}};
        IF rv IS NOT NULL THEN
          o_holder_ttl_us := greatest({{S}}._us(ru - now_), 1000);
        END IF;
        IF p_waiter <> '' THEN
          PERFORM {{S}}._enqueue(p_name, p_waiter, p_waiter_ttl_us, p_fair, p_no_reserve, now_, p_chan);
          o_queued := true;
          o_head := {{S}}._head(p_name) = p_waiter;
        END IF;
        RETURN;
      END IF;
    END IF;
    IF p_waiter <> '' THEN
      PERFORM {{S}}._remove(p_name, p_waiter); -- granted: it leaves the queue
    END IF;
    queued := EXISTS (SELECT 1 FROM {{S}}.waiters WHERE name = p_name);
  END IF;

  IF live THEN -- re-entry: the token stays; a resent attempt counts once
    UPDATE {{S}}.locks
       SET holds = holds + CASE WHEN attempt IS DISTINCT FROM p_attempt THEN 1 ELSE 0 END,
           attempt = p_attempt,
           expires_at = {{S}}._hold_expiry(holds + CASE WHEN attempt IS DISTINCT FROM p_attempt THEN 1 ELSE 0 END,
                                           expires_at, now_ + p_ttl_us * interval '1 microsecond'),
           marked = marked OR queued OR p_announce
     WHERE name = p_name
    RETURNING token, holds INTO o_token, o_holds;
  ELSE
    o_token := greatest(nextval({{TOKENS}}), l.high_water + 1, shared_hw + 1);
    UPDATE {{S}}.locks
       SET owner = p_owner, holds = 1, token = o_token, metadata = p_metadata, attempt = p_attempt,
           release_id = NULL, release_ids = NULL, expires_at = now_ + p_ttl_us * interval '1 microsecond',
           high_water = greatest(high_water, o_token), marked = queued OR p_announce
     WHERE name = p_name;
    o_holds := 1;
  END IF;
  IF p_announce THEN
    PERFORM {{S}}._notify(p_name, 'announced');
  END IF;
  o_acquired := true;
END $$;

-- acquire without p_chan: version 6's signature, for processes of that
-- version (their waiters are woken on the schema's channel).
CREATE OR REPLACE FUNCTION {{S}}.acquire(
  p_name text, p_owner text, p_ttl_us bigint, p_metadata text, p_attempt text,
  p_waiting boolean, p_waiter text, p_waiter_ttl_us bigint, p_fair boolean,
  p_behind boolean, p_no_reserve boolean, p_announce boolean,
  OUT o_acquired boolean, OUT o_token bigint, OUT o_holds integer, OUT o_holder text,
  OUT o_holder_ttl_us bigint, OUT o_queued boolean, OUT o_head boolean, OUT o_reserved boolean)
LANGUAGE sql AS $$
  SELECT * FROM {{S}}.acquire(p_name, p_owner, p_ttl_us, p_metadata, p_attempt, p_waiting, p_waiter,
    p_waiter_ttl_us, p_fair, p_behind, p_no_reserve, p_announce, NULL::text)
$$;

-- extend renews leases and waiters' heartbeats (p_waiter[i]), all in one
-- call. Statuses: 1 extended, 2 missing, 3 held by another owner (or
-- taken over by a force-release: _taken); wake
-- tells a waiter that it heads the queue of a free lock. p_tokens[i]
-- (version 12), when not 0, is the token of the grant a lease renews
-- (engine.ExtendRequest.Token): p_owners[i]'s hold under another token (a
-- newer grant of the owner, after its lease's was freed) is not renewed
-- but answered 3 with the hold's token. A waiter's heartbeat ignores it;
-- a missing element (a shorter array) counts as 0.
CREATE OR REPLACE FUNCTION {{S}}.extend(p_names text[], p_owners text[], p_ttls_us bigint[], p_waiter boolean[],
  p_tokens bigint[])
RETURNS TABLE (o_i integer, o_status integer, o_token bigint, o_wake boolean)
LANGUAGE plpgsql AS $$
DECLARE
  now_ timestamptz;
  r record;
  rv text;
  held boolean;
BEGIN
  -- Every row of the batch is locked first, in one order, so that two
  -- batches never wait for each other in a cycle.
  PERFORM 1 FROM {{S}}.locks WHERE name = ANY (p_names) ORDER BY name FOR UPDATE;
  now_ := clock_timestamp();
  RETURN QUERY
    WITH req AS (
      SELECT u.i::integer AS i, u.n, u.o, u.t, coalesce(u.k, 0) AS tok
        FROM unnest(p_names, p_owners, p_ttls_us, p_waiter, p_tokens) WITH ORDINALITY AS u(n, o, t, w, k, i)
       WHERE NOT u.w
    ), upd AS (
      UPDATE {{S}}.locks k SET expires_at = {{S}}._hold_expiry(k.holds, k.expires_at, now_ + req.t * interval '1 microsecond')
        FROM req
       WHERE k.name = req.n AND k.owner = req.o AND k.expires_at > now_ AND (req.tok = 0 OR k.token = req.tok)
      RETURNING k.name, k.owner, k.token
    )
    SELECT req.i,
           CASE WHEN upd.name IS NOT NULL THEN 1
                WHEN {{S}}._taken(req.n, req.o, now_) THEN 3
                WHEN NOT {{S}}._live(k, now_) THEN 2
                ELSE 3 END,
           coalesce(upd.token,
                    CASE WHEN req.tok <> 0 AND k.owner = req.o AND {{S}}._live(k, now_) THEN k.token END, -- a newer grant
                    0::bigint),
           false
      FROM req
      LEFT JOIN upd ON upd.name = req.n AND upd.owner = req.o AND (req.tok = 0 OR upd.token = req.tok)
      LEFT JOIN {{S}}.locks k ON k.name = req.n;
  FOR r IN
    SELECT u.i::integer AS i, u.n, u.o, u.t
      FROM unnest(p_names, p_owners, p_ttls_us, p_waiter) WITH ORDINALITY AS u(n, o, t, w, i)
     WHERE u.w
  LOOP
    o_i := r.i; o_token := 0; o_wake := false;
    PERFORM {{S}}._settle(r.n, now_);
    UPDATE {{S}}.waiters SET deadline = now_ + r.t * interval '1 microsecond'
     WHERE name = r.n AND waiter = r.o;
    IF NOT FOUND THEN
      o_status := 2;
      RETURN NEXT;
      CONTINUE;
    END IF;
    o_status := 1;
    SELECT {{S}}._live(k, now_) INTO held FROM {{S}}.locks k WHERE k.name = r.n;
    IF NOT coalesce(held, false) THEN
      -- A free lock: a lapsed reservation's successor is served even if
      -- nobody else touches the name.
      PERFORM {{S}}._wake(r.n, now_, false);
      SELECT reserved_for INTO rv FROM {{S}}.locks WHERE name = r.n;
      o_wake := {{S}}._head(r.n) = r.o AND (rv IS NULL OR rv = r.o);
    END IF;
    RETURN NEXT;
  END LOOP;
END $$;

-- extend without p_tokens: version 11's signature, for processes of that
-- version (every renewal renews the owner's hold, whatever its token).
CREATE OR REPLACE FUNCTION {{S}}.extend(p_names text[], p_owners text[], p_ttls_us bigint[], p_waiter boolean[])
RETURNS TABLE (o_i integer, o_status integer, o_token bigint, o_wake boolean)
LANGUAGE sql AS $$ SELECT * FROM {{S}}.extend(p_names, p_owners, p_ttls_us, p_waiter, '{}'::bigint[]) $$;

-- release drops one hold of p_owner. p_id (when not '') identifies the
-- call: a copy of the last release with the same id drops nothing.
-- p_token (version 12), when not 0, is the token of the grant released
-- (engine.ReleaseRequest.Token): p_owner's hold under another token (a
-- newer grant of the owner) is answered 3 and nothing is dropped.
-- Statuses: 1 released, 2 not held, 3 another owner holds it.
CREATE OR REPLACE FUNCTION {{S}}.release(p_name text, p_owner text, p_id text, p_token bigint,
  OUT o_status integer, OUT o_remaining integer)
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.locks := {{S}}._lock(p_name);
  now_ timestamptz := clock_timestamp();
BEGIN
  o_remaining := 0;
  IF NOT {{S}}._live(l, now_) THEN
    o_status := 2;
    RETURN;
  END IF;
  IF l.owner <> p_owner OR (p_token <> 0 AND l.token <> p_token) THEN
    o_status := 3;
    RETURN;
  END IF;
  o_status := 1;
  IF {{S}}._released(l.release_id, l.release_ids, p_id) THEN
    o_remaining := l.holds;
    RETURN;
  END IF;
  IF l.holds > 1 THEN
    UPDATE {{S}}.locks SET holds = holds - 1, release_id = CASE WHEN p_id = '' THEN release_id END,
           release_ids = {{S}}._noted_release(release_id, release_ids, p_id) WHERE name = p_name
    RETURNING holds INTO o_remaining;
    RETURN;
  END IF;
  PERFORM {{S}}._free(l, now_, false);
END $$;

-- release without p_token: version 11's signature, for processes of that
-- version (and release_multi's calls before version 12).
CREATE OR REPLACE FUNCTION {{S}}.release(p_name text, p_owner text, p_id text,
  OUT o_status integer, OUT o_remaining integer)
LANGUAGE sql AS $$ SELECT * FROM {{S}}.release(p_name, p_owner, p_id, 0::bigint) $$;

-- force_release frees name whoever holds it, or only when p_owner holds
-- it (p_owner not ''), and wakes its waiters; the holder is marked taken
-- over (_mark_taken). It reports whether the lock was held (by p_owner).
-- (Version 3's force_release(text) is dropped first: a call with the name
-- alone resolves to this one.)
DROP FUNCTION IF EXISTS {{S}}.force_release(text);
CREATE OR REPLACE FUNCTION {{S}}.force_release(p_name text, p_owner text DEFAULT '') RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.locks := {{S}}._lock(p_name);
  now_ timestamptz := clock_timestamp();
BEGIN
  IF l.name IS NULL OR (p_owner <> '' AND NOT ({{S}}._live(l, now_) AND l.owner = p_owner)) THEN
    RETURN false;
  END IF;
  IF {{S}}._live(l, now_) THEN
    PERFORM {{S}}._mark_taken(p_name, l.owner, l.expires_at, now_);
  END IF;
  PERFORM {{S}}._free(l, now_, true);
  RETURN {{S}}._live(l, now_);
END $$;

-- leave takes waiter p_waiter out of name's queue; when it was the head
-- of a free lock, the next head is woken. It reports whether it was queued.
CREATE OR REPLACE FUNCTION {{S}}.leave(p_name text, p_waiter text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.locks := {{S}}._lock(p_name);
  now_ timestamptz := clock_timestamp();
  was_head boolean;
BEGIN
  IF l.name IS NULL THEN
    RETURN false;
  END IF;
  PERFORM {{S}}._settle(p_name, now_);
  IF NOT EXISTS (SELECT 1 FROM {{S}}.waiters WHERE name = p_name AND waiter = p_waiter) THEN
    RETURN false;
  END IF;
  was_head := {{S}}._head(p_name) = p_waiter;
  PERFORM {{S}}._remove(p_name, p_waiter);
  IF NOT {{S}}._live(l, now_) THEN
    IF NOT EXISTS (SELECT 1 FROM {{S}}.waiters WHERE name = p_name) THEN
      PERFORM {{S}}._forget(p_name);
    ELSIF was_head THEN
      PERFORM {{S}}._wake(p_name, now_, true);
    END IF;
  END IF;
  RETURN true;
END $$;

-- raise_fence raises name's high-water to at least p_token and makes it
-- the grant's token, while p_owner holds the lock (engine.FenceRaiser),
-- within engine.CheckRaise (the Go side refuses a token above 2^53-1): a
-- token below the grant's is refused with 'DISTLOCK below <token>', one
-- more than {{RAISE_AHEAD_US}} µs ahead of the clock with 'DISTLOCK ahead
-- <limit>' (SQLSTATE DL001), having changed nothing.
CREATE OR REPLACE FUNCTION {{S}}.raise_fence(p_name text, p_owner text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.locks := {{S}}._lock(p_name);
  now_ timestamptz;
BEGIN
  now_ := clock_timestamp();
  IF NOT {{S}}._live(l, now_) OR l.owner <> p_owner THEN
    RETURN false;
  END IF;
  PERFORM {{S}}._check_raise(l.token, p_token, now_);
  UPDATE {{S}}.locks SET token = p_token, high_water = greatest(high_water, p_token) WHERE name = p_name;
  RETURN true;
END $$;

-- _check_raise refuses a raise of a holder's token from p_current to
-- p_token at now_ (engine.CheckRaise): below p_current, or above it and
-- more than {{RAISE_AHEAD_US}} µs ahead of now_.
CREATE OR REPLACE FUNCTION {{S}}._check_raise(p_current bigint, p_token bigint, now_ timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  lim bigint := (extract(epoch FROM now_) * 1000000)::bigint + {{RAISE_AHEAD_US}};
BEGIN
  IF p_token < p_current THEN
    RAISE EXCEPTION 'DISTLOCK below %', p_current USING ERRCODE = 'DL001';
  END IF;
  IF p_token > p_current AND p_token > lim THEN
    RAISE EXCEPTION 'DISTLOCK ahead %', lim USING ERRCODE = 'DL001';
  END IF;
END $$;

-- set_metadata sets the metadata of name while p_owner holds it and
-- notifies the name's subscribers (an election's Proclaim). Statuses as
-- extend's: a holder a force-release freed (_taken) is answered 3, taken
-- over, as its renewal would be (version 11; before, 2, and the Client
-- recorded the loss as an expiry). p_token (version 16), when not 0, is
-- the token of the grant whose holder sets it (engine.MetadataRequest.Token,
-- an election's term), with extend's p_tokens' meaning: p_owner's hold
-- under another token (a newer grant of the owner: the caller was deposed)
-- is answered 3 and nothing changes. The row of locks is held (_lock)
-- from the check to the write.
CREATE OR REPLACE FUNCTION {{S}}.set_metadata(p_name text, p_owner text, p_metadata text, p_token bigint) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.locks := {{S}}._lock(p_name);
  now_ timestamptz := clock_timestamp();
BEGIN
  IF NOT {{S}}._live(l, now_) THEN
    IF {{S}}._taken(p_name, p_owner, now_) THEN
      RETURN 3;
    END IF;
    RETURN 2;
  END IF;
  IF l.owner <> p_owner OR (p_token <> 0 AND l.token <> p_token) THEN
    RETURN 3;
  END IF;
  UPDATE {{S}}.locks SET metadata = p_metadata, marked = true WHERE name = p_name;
  PERFORM {{S}}._notify(p_name, 'proclaimed');
  RETURN 1;
END $$;

-- set_metadata without p_token: version 15's signature, for processes of
-- that version and before (the owner's hold, whatever its token).
CREATE OR REPLACE FUNCTION {{S}}.set_metadata(p_name text, p_owner text, p_metadata text) RETURNS integer
LANGUAGE sql AS $$ SELECT {{S}}.set_metadata(p_name, p_owner, p_metadata, 0::bigint) $$;

-- inspect reads name's state without changing or locking anything.
CREATE OR REPLACE FUNCTION {{S}}.inspect(p_name text,
  OUT o_held boolean, OUT o_owner text, OUT o_holds integer, OUT o_metadata text,
  OUT o_token bigint, OUT o_ttl_us bigint, OUT o_high_water bigint, OUT o_waiters integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  now_ timestamptz := clock_timestamp();
  l {{S}}.locks;
BEGIN
  SELECT * INTO l FROM {{S}}.locks WHERE name = p_name;
  o_held := {{S}}._live(l, now_);
  o_owner := ''; o_holds := 0; o_metadata := ''; o_token := 0; o_ttl_us := 0;
  o_high_water := coalesce(l.high_water, 0);
  IF o_held THEN
    o_owner := l.owner; o_holds := l.holds; o_metadata := l.metadata; o_token := l.token;
    o_ttl_us := {{S}}._us(l.expires_at - now_);
  END IF;
  SELECT count(*) INTO o_waiters FROM {{S}}.waiters WHERE name = p_name AND deadline > now_;
END $$;

-- sweep deletes up to p_limit rows of locks that hold nothing: expired or
-- free, nobody queued, high-water not above the token sequence; then
-- taken-over marks past their end; then rows of shared locks unused for a
-- week, with no holder and nobody queued.
-- Rows locked by someone else are skipped. It returns how many it deleted.
CREATE OR REPLACE FUNCTION {{S}}.sweep(p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  n integer := 0;
  gone integer;
  c text;
  hw bigint;
BEGIN
  FOR c IN
    SELECT name FROM {{S}}.locks
     WHERE NOT {{S}}._live(locks, clock_timestamp())
     LIMIT p_limit
  LOOP
    PERFORM 1 FROM {{S}}.locks WHERE name = c FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    DELETE FROM {{S}}.waiters WHERE name = c AND deadline <= clock_timestamp();
    IF NOT EXISTS (SELECT 1 FROM {{S}}.locks k WHERE k.name = c AND {{S}}._live(k, clock_timestamp()))
       AND NOT EXISTS (SELECT 1 FROM {{S}}.waiters w WHERE w.name = c)
       AND {{S}}._forget(c) THEN
      n := n + 1;
    END IF;
  END LOOP;
  -- Taken-over marks past their end.
  DELETE FROM {{S}}.taken t WHERE t.ctid = ANY (ARRAY(
    SELECT ctid FROM {{S}}.taken WHERE until <= clock_timestamp() LIMIT greatest(p_limit - n, 0)));
  GET DIAGNOSTICS gone = ROW_COUNT;
  n := n + gone;
  -- Shared locks unused for the fence memory (a week), with nobody
  -- holding or queued: their kind and limit are forgotten.
  FOR c IN
    SELECT name FROM {{S}}.shared
     WHERE used_at <= clock_timestamp() - interval '7 days'
     LIMIT greatest(p_limit - n, 0)
  LOOP
    PERFORM 1 FROM {{S}}.shared WHERE name = c FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    PERFORM {{S}}._shared_purge(c, clock_timestamp());
    DELETE FROM {{S}}.shared s WHERE s.name = c
       AND s.high_water <= (SELECT last_value FROM {{S}}.tokens)
       AND NOT EXISTS (SELECT 1 FROM {{S}}.shared_holders h WHERE h.name = c)
       AND NOT EXISTS (SELECT 1 FROM {{S}}.shared_waiters w WHERE w.name = c)
    RETURNING s.high_water INTO hw;
    IF FOUND THEN
      n := n + 1;
      -- The name's pgfence mark keeps its high-water (as _forget's).
      UPDATE {{S}}.fence_marks SET granted = hw WHERE name = c AND granted < hw;
    END IF;
  END LOOP;
  RETURN n;
END $$;

-- fence_check is pgfence's check, run in the caller's transaction (see
-- package pgfence). Mode 1 (current): p_token is the name's current,
-- unexpired grant by p_holder; the lock's row is share-locked until the
-- transaction ends, so no other grant can commit before it; for a shared
-- lock, p_holder's unexpired holder row with token p_token, share-locked
-- the same way (its permits cannot come back before the commit). Mode 2
-- (highest seen): p_token is at least the highest token the check has
-- accepted for the name (a tie only from the same holder) and not below
-- the name's newest grant of any kind: the greatest of its token records,
-- the row of locks' high-water (a mutex's grants and raises), the row of
-- shared's (a permit's, a reader's or a writer's) and the mark's granted
-- (the high-water of a deleted row, _forget; version 14: before, only the
-- row of locks counted, so a deposed or expired holder's token passed
-- while a newer shared grant held the name); the token is recorded. Mode 2
-- locks only the mark (FOR UPDATE), not the row of locks (since version
-- 14: a release that deletes that row waits for the mark, to carry its
-- high-water there, and a second check of the name in the same open
-- transaction, waiting for the release's row, would deadlock with it; a
-- grant that commits after the check is ordered after it, and its
-- holder's own check waits for the mark). Mode 2 runs only in a READ
-- COMMITTED (or READ UNCOMMITTED, the same in PostgreSQL) transaction
-- (version 15): its reads of the high-waters must see every grant
-- committed before the check, and a REPEATABLE READ or SERIALIZABLE
-- transaction reads its snapshot, taken at its first statement, in which
-- a newer grant committed since is missing (a deposed holder's token
-- passed). There it raises SQLSTATE DL002 ('pgfence HighestSeen needs a
-- READ COMMITTED transaction (the transaction is <level>)') before it
-- writes anything. Mode 2 raises SQLSTATE DL003 ('pgfence token <t> is
-- above the newest grant of <name> (<g>)'), having recorded nothing, for a
-- token above the name's newest grant of any kind, the greatest above
-- (version 19): a token no grant of the name has had (another name's, one
-- not minted yet), or any token of a name whose grants are all forgotten
-- (no row, no mark: 0); before, it was recorded, and every later real
-- grant of the name, below it, was refused as stale for good. Mode 1
-- works at every level: its FOR SHARE reads of the rows a newer grant
-- changed fail with 40001 at those levels. It returns whether the write
-- may go ahead and the token it was compared with.
CREATE OR REPLACE FUNCTION {{S}}.fence_check(p_name text, p_token bigint, p_holder text, p_mode integer,
  OUT o_ok boolean, OUT o_highest bigint)
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.locks;
  m {{S}}.fence_marks;
  h record;
  g bigint;
BEGIN
  IF p_mode = 1 THEN
    SELECT * INTO l FROM {{S}}.locks WHERE name = p_name FOR SHARE;
    o_highest := coalesce(l.high_water, 0);
    o_ok := {{S}}._live(l, clock_timestamp()) AND l.owner = p_holder AND l.token = p_token;
    IF NOT o_ok AND NOT coalesce({{S}}._live(l, clock_timestamp()), false) THEN
      -- A shared lock's holder (a reader, a writer, a permit): its row is
      -- share-locked until the transaction ends.
      SELECT * INTO h FROM {{S}}.shared_holders WHERE name = p_name AND owner = p_holder FOR SHARE;
      IF FOUND THEN
        o_ok := h.expires_at > clock_timestamp() AND h.token = p_token;
        o_highest := greatest(o_highest, coalesce((SELECT s.high_water FROM {{S}}.shared s WHERE s.name = p_name), 0));
      END IF;
    END IF;
    RETURN;
  END IF;
  IF current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN
    RAISE EXCEPTION 'pgfence HighestSeen needs a READ COMMITTED transaction (the transaction is %)',
      current_setting('transaction_isolation')
      USING ERRCODE = 'DL002',
            HINT = 'Use mode Current, or run the check in a READ COMMITTED transaction.';
  END IF;
  INSERT INTO {{S}}.fence_marks (name, token, holder) VALUES (p_name, 0, '')
  ON CONFLICT (name) DO NOTHING;
  SELECT * INTO m FROM {{S}}.fence_marks WHERE name = p_name FOR UPDATE;
  -- A grant newer than p_token, of any kind, makes it stale even before
  -- its first write. Read after the mark is locked: a release that
  -- deletes a row meanwhile has carried its high-water to m.granted.
  g := greatest(m.granted,
                coalesce((SELECT k.high_water FROM {{S}}.locks k WHERE k.name = p_name), 0),
                coalesce((SELECT s.high_water FROM {{S}}.shared s WHERE s.name = p_name), 0));
  IF p_token > g THEN
    RAISE EXCEPTION 'pgfence token % is above the newest grant of % (%)', p_token, p_name, g
      USING ERRCODE = 'DL003',
            HINT = 'Pass the token of the lease of this name.';
  END IF;
  o_highest := greatest(m.token, g);
  o_ok := (p_token > m.token OR (p_token = m.token AND m.holder = p_holder))
          AND p_token >= g;
  IF o_ok THEN
    UPDATE {{S}}.fence_marks SET token = p_token, holder = p_holder WHERE name = p_name;
  END IF;
END $$;

-- Shared locks (engine.Sharer): semaphores and reader-writer locks, with
-- the semantics of the memory engine's (engine/memory/shared.go), in
-- tables of their own. A name's row of shared holds its kind, its limit
-- and its fencing high-water; every function on a shared lock first locks
-- that row FOR UPDATE, then drops the holders whose lease ended and the
-- waiters whose heartbeat deadline passed (judged by clock_timestamp()),
-- so a crashed holder frees exactly its own permits after its ttl. The
-- row stays while the lock is unused, so the limit is remembered; sweep
-- deletes it a week (engine's fence memory) after its last use.
--
-- The queue is strictly first come, first served with weights: a request
-- is granted only when its weight fits in the free permits and nobody is
-- queued ahead of it. Only the head is woken ('w:<waiter>' on the
-- schema's channel, as the mutex's), and only when it fits.
CREATE TABLE IF NOT EXISTS {{S}}.shared (
  name       text COLLATE "C" PRIMARY KEY,
  kind       smallint NOT NULL,      -- 1 semaphore, 2 rwlock
  lim        integer NOT NULL,       -- the permits
  high_water bigint NOT NULL DEFAULT 0,
  used_at    timestamptz NOT NULL    -- the last grant or change
);

CREATE TABLE IF NOT EXISTS {{S}}.shared_holders (
  name       text COLLATE "C" NOT NULL,
  owner      text NOT NULL,
  weight     integer NOT NULL,
  holds      integer NOT NULL,
  token      bigint NOT NULL,
  metadata   text NOT NULL DEFAULT '',
  attempt    text,                   -- the Acquire call of the grant or last re-entry
  expires_at timestamptz NOT NULL,
  release_id text,                   -- a release call that counted a hold down (version 20)
  release_ids text[],                -- the last ones (_noted_release; version 21)
  PRIMARY KEY (name, owner)
);
ALTER TABLE {{S}}.shared_holders ADD COLUMN IF NOT EXISTS release_id text; -- version 20
ALTER TABLE {{S}}.shared_holders ADD COLUMN IF NOT EXISTS release_ids text[]; -- version 21

CREATE TABLE IF NOT EXISTS {{S}}.shared_waiters (
  name     text COLLATE "C" NOT NULL,
  waiter   text NOT NULL,
  ticket   bigint NOT NULL,          -- arrival order
  weight   integer NOT NULL,         -- the permits asked for
  deadline timestamptz NOT NULL,     -- heartbeat deadline
  PRIMARY KEY (name, waiter)
);
CREATE INDEX IF NOT EXISTS shared_waiters_order ON {{S}}.shared_waiters (name, ticket);

-- _shared_purge drops name's holders whose lease ended and waiters whose
-- heartbeat deadline passed; it returns the permits held after.
CREATE OR REPLACE FUNCTION {{S}}._shared_purge(p_name text, now_ timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{S}}.shared_holders WHERE name = p_name AND expires_at <= now_;
  DELETE FROM {{S}}.shared_waiters WHERE name = p_name AND deadline <= now_;
  RETURN coalesce((SELECT sum(weight) FROM {{S}}.shared_holders WHERE name = p_name), 0);
END $$;

-- _shared_due tells whether the head of a shared lock's queue, asking for
-- weight permits, has an attempt to make: its weight fits in the free
-- permits (lim - used), or it is above the limit (a set_limit shrank it
-- under the head, version 10) and never will: its attempt is refused
-- ('DISTLOCK weight') and it leaves the queue, instead of holding up the
-- waiters behind it for good.
CREATE OR REPLACE FUNCTION {{S}}._shared_due(weight integer, lim integer, used bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(weight <= lim - used OR weight > lim, false) $$;

-- _shared_wake wakes the head of name's queue when it has an attempt to
-- make (_shared_due).
CREATE OR REPLACE FUNCTION {{S}}._shared_wake(p_name text, lim integer, used bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  h {{S}}.shared_waiters;
BEGIN
  SELECT * INTO h FROM {{S}}.shared_waiters WHERE name = p_name ORDER BY ticket LIMIT 1;
  IF FOUND AND {{S}}._shared_due(h.weight, lim, used) THEN
    PERFORM {{S}}._notify(p_name, 'w:' || h.waiter);
  END IF;
END $$;

-- _mutex_check refuses a mutex's grant of name while holders of a shared
-- lock hold it, or (version 17) live waiters queue for it ('DISTLOCK kind
-- <k>', SQLSTATE DL001, as acquire_shared's refusals) and returns the
-- shared lock's high-water (0 when the name is no shared lock), which the
-- mutex's token stays above. The caller holds the name's row of locks,
-- which a shared lock's grant locks FOR KEY SHARE before it counts: the two
-- grants never pass each other's check. It also locks the shared lock's row
-- FOR SHARE (version 9) and judges the holders by the clock read after it
-- has it: a renewal (extend_shared) or a raise (raise_shared_fence) holds
-- that row FOR UPDATE, not the row of locks, and judged its holder live by
-- its own clock; read before it commits, the holder's old expiry let a
-- mutex in beside the renewed holder, and the old high-water gave it a
-- token below the raised one. One index read when the name is no shared
-- lock.
CREATE OR REPLACE FUNCTION {{S}}._mutex_check(p_name text, now_ timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  k smallint;
  hw bigint;
BEGIN
  SELECT s.kind, s.high_water INTO k, hw FROM {{S}}.shared s WHERE s.name = p_name FOR SHARE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  now_ := greatest(now_, clock_timestamp());
  IF EXISTS (SELECT 1 FROM {{S}}.shared_holders h WHERE h.name = p_name AND h.expires_at > now_)
     OR EXISTS (SELECT 1 FROM {{S}}.shared_waiters w WHERE w.name = p_name AND w.deadline > now_) THEN
    -- Version 17: a live queued waiter binds the name to its kind, as a
    -- holder does (the shared row, held FOR SHARE, keeps one from
    -- entering meanwhile).
    RAISE EXCEPTION 'DISTLOCK kind %', k USING ERRCODE = 'DL001';
  END IF;
  RETURN hw;
END $$;

-- _shared_mutex refuses a shared lock's call (acquire_shared, set_limit)
-- on a name bound to the mutex: held as one, or (version 17) with live
-- waiters queued for it, which bind the name to their kind as a holder
-- does (one whose reservation lapsed does not count: _settle drops it).
-- l is the name's row of locks, which the caller holds FOR KEY SHARE: it
-- keeps a mutex's call from granting or queueing meanwhile.
DROP FUNCTION IF EXISTS {{S}}._shared_mutex(text, timestamptz); -- version 17's, of set_limit only
CREATE OR REPLACE FUNCTION {{S}}._shared_mutex(l {{S}}.locks, now_ timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF {{S}}._live(l, now_)
     OR EXISTS (SELECT 1 FROM {{S}}.waiters w WHERE w.name = l.name AND w.deadline > now_
                AND NOT (w.waiter IS NOT DISTINCT FROM l.reserved_for AND now_ >= l.reserved_until)) THEN
    RAISE EXCEPTION 'DISTLOCK mutex' USING ERRCODE = 'DL001';
  END IF;
END $$;

-- acquire_shared grants p_weight permits of the shared lock name (made with
-- kind p_kind and limit p_limit when it does not exist; once it exists, its
-- stored limit governs and p_limit is not compared) to p_owner
-- (engine.Sharer.AcquireShared), holding the name's row of locks FOR KEY
-- SHARE (made free when there is none) and then its row of shared FOR
-- UPDATE: no mutex is granted meanwhile, and none is held (nor, version 17,
-- waited for in its queue) when it grants. Refusals raise SQLSTATE DL001
-- with the message 'DISTLOCK mutex', 'DISTLOCK kind <k>', 'DISTLOCK weight
-- <l>' (l: the stored limit), 'DISTLOCK held <w>' or 'DISTLOCK upgrade' (as
-- engine/redis/scripts/shared_acquire.lua), having changed nothing. A
-- holder re-enters (holds + 1 unless the attempt id is the one recorded);
-- otherwise the permits are granted when they fit and nobody is queued
-- ahead (p_waiter at the head is not ahead of itself), and the next head is
-- woken if it fits too. A refused waiter enters the queue (or keeps its
-- place), and the head is woken if it fits (a head that died). A refusal
-- reports the holder whose lease ends first and its time left
-- (engine.ReserveTTL when nobody holds it), reserved when the permits are
-- free enough but kept for the queue.
CREATE OR REPLACE FUNCTION {{S}}.acquire_shared(
  p_name text, p_owner text, p_ttl_us bigint, p_metadata text, p_attempt text,
  p_waiter text, p_waiter_ttl_us bigint, p_kind integer, p_limit integer, p_weight integer,
  OUT o_acquired boolean, OUT o_token bigint, OUT o_holds integer, OUT o_holder text,
  OUT o_holder_ttl_us bigint, OUT o_queued boolean, OUT o_head boolean, OUT o_reserved boolean)
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.locks;
  s {{S}}.shared;
  h {{S}}.shared_holders;
  now_ timestamptz;
  used bigint;
  head text;
BEGIN
  o_acquired := false; o_token := 0; o_holds := 0; o_holder := ''; o_holder_ttl_us := 0;
  o_queued := false; o_head := false; o_reserved := false;
  LOOP
    -- The rows of locks before those of shared, as in every function. The
    -- insert waits for a mutex's grant that is inserting the row.
    SELECT * INTO l FROM {{S}}.locks WHERE name = p_name FOR KEY SHARE;
    EXIT WHEN FOUND;
    INSERT INTO {{S}}.locks (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
  END LOOP;
  LOOP
    SELECT * INTO s FROM {{S}}.shared WHERE name = p_name FOR UPDATE;
    EXIT WHEN FOUND;
    INSERT INTO {{S}}.shared (name, kind, lim, used_at)
    VALUES (p_name, p_kind, p_limit, clock_timestamp())
    ON CONFLICT (name) DO NOTHING;
  END LOOP;
  now_ := clock_timestamp();
  PERFORM {{S}}._shared_mutex(l, now_);
  used := {{S}}._shared_purge(p_name, now_);
  IF (s.kind <> p_kind OR s.lim <> p_limit) AND used = 0 AND s.used_at <= now_ - interval '7 days'
     AND NOT EXISTS (SELECT 1 FROM {{S}}.shared_waiters WHERE name = p_name) THEN
    -- Unused for the fence memory: forgotten, as the memory engine does.
    UPDATE {{S}}.shared SET kind = p_kind, lim = p_limit WHERE name = p_name;
    s.kind := p_kind; s.lim := p_limit;
  END IF;
  IF s.kind <> p_kind THEN
    RAISE EXCEPTION 'DISTLOCK kind %', s.kind USING ERRCODE = 'DL001';
  ELSIF p_weight < 1 OR p_weight > s.lim THEN
    RAISE EXCEPTION 'DISTLOCK weight %', s.lim USING ERRCODE = 'DL001';
  END IF;

  SELECT * INTO h FROM {{S}}.shared_holders WHERE name = p_name AND owner = p_owner;
  IF FOUND THEN -- re-entry: the token stays; a resent attempt counts once
    IF h.weight <> p_weight THEN
      IF s.kind = 2 THEN
        RAISE EXCEPTION 'DISTLOCK upgrade' USING ERRCODE = 'DL001';
      END IF;
      RAISE EXCEPTION 'DISTLOCK held %', h.weight USING ERRCODE = 'DL001';
    END IF;
    UPDATE {{S}}.shared_holders
       SET holds = holds + CASE WHEN attempt IS DISTINCT FROM p_attempt THEN 1 ELSE 0 END,
           attempt = p_attempt,
           expires_at = {{S}}._hold_expiry(holds + CASE WHEN attempt IS DISTINCT FROM p_attempt THEN 1 ELSE 0 END,
                                           expires_at, now_ + p_ttl_us * interval '1 microsecond')
     WHERE name = p_name AND owner = p_owner
    RETURNING token, holds INTO o_token, o_holds;
    IF p_waiter <> '' THEN
      DELETE FROM {{S}}.shared_waiters WHERE name = p_name AND waiter = p_waiter;
    END IF;
    o_acquired := true;
    RETURN;
  END IF;

  SELECT waiter INTO head FROM {{S}}.shared_waiters WHERE name = p_name ORDER BY ticket LIMIT 1;
  IF (head IS NULL OR head = p_waiter) AND p_weight <= s.lim - used THEN
    IF p_waiter <> '' THEN
      DELETE FROM {{S}}.shared_waiters WHERE name = p_name AND waiter = p_waiter;
    END IF;
    o_token := greatest(nextval({{TOKENS}}), s.high_water + 1, l.high_water + 1);
    INSERT INTO {{S}}.shared_holders (name, owner, weight, holds, token, metadata, attempt, expires_at)
    VALUES (p_name, p_owner, p_weight, 1, o_token, p_metadata, p_attempt,
            now_ + p_ttl_us * interval '1 microsecond');
    UPDATE {{S}}.shared SET high_water = greatest(high_water, o_token), used_at = now_ WHERE name = p_name;
    IF head IS NOT NULL THEN
      PERFORM {{S}}._shared_wake(p_name, s.lim, used + p_weight); -- the next head, if it fits too
    END IF;
    o_acquired := true; o_holds := 1;
    RETURN;
  END IF;

  o_holder_ttl_us := {{RESERVE_US}};
  SELECT owner, {{S}}._us(expires_at - now_) INTO o_holder, o_holder_ttl_us
    FROM {{S}}.shared_holders WHERE name = p_name ORDER BY expires_at, token LIMIT 1;
  IF NOT FOUND OR p_weight <= s.lim - used THEN
    o_holder := ''; o_reserved := true; -- free enough, but kept for the queue
    IF NOT FOUND THEN
      o_holder_ttl_us := {{RESERVE_US}};
    END IF;
  END IF;
  IF p_waiter <> '' THEN
    INSERT INTO {{S}}.shared_waiters AS q (name, waiter, ticket, weight, deadline)
    VALUES (p_name, p_waiter, nextval({{TICKETS}}), p_weight, now_ + p_waiter_ttl_us * interval '1 microsecond')
    ON CONFLICT (name, waiter) DO UPDATE SET weight = EXCLUDED.weight, deadline = EXCLUDED.deadline;
    o_queued := true;
    o_head := coalesce(head, p_waiter) = p_waiter;
    PERFORM {{S}}._shared_wake(p_name, s.lim, used); -- the head may fit (a head that died)
  END IF;
END $$;

-- release_shared drops one hold of p_owner; its permits come back with
-- the last one, and the head of the queue is woken if it fits. p_token
-- (version 12), when not 0, is the token of the grant released
-- (engine.ReleaseRequest.Token): p_owner's hold under another token (a
-- newer grant of the owner) is answered 3 and nothing is dropped. p_kind
-- (version 14), when not 0, is the kind the release asks for
-- (engine.ReleaseRequest.Kind): while p_owner holds the lock and it is of
-- another kind, the call is refused with 'DISTLOCK kind <k>' (SQLSTATE
-- DL001, as acquire_shared's), having changed nothing; before, a release
-- asked as a reader-writer lock's dropped a semaphore's permit.
-- Statuses: 1 released, 2 not held, 3 held under another token.
CREATE OR REPLACE FUNCTION {{S}}.release_shared(p_name text, p_owner text, p_token bigint, p_kind integer, p_id text,
  OUT o_status integer, OUT o_remaining integer)
LANGUAGE plpgsql AS $$
DECLARE
  s {{S}}.shared;
  now_ timestamptz;
  used bigint;
BEGIN
  o_status := 2; o_remaining := 0;
  SELECT * INTO s FROM {{S}}.shared WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  now_ := clock_timestamp();
  PERFORM {{S}}._shared_purge(p_name, now_);
  IF p_kind <> 0 AND s.kind <> p_kind
     AND EXISTS (SELECT 1 FROM {{S}}.shared_holders WHERE name = p_name AND owner = p_owner) THEN
    RAISE EXCEPTION 'DISTLOCK kind %', s.kind USING ERRCODE = 'DL001';
  END IF;
  IF p_id <> '' THEN
    -- A copy of a release that counted the hold down: answered as it
    -- was, with the holds there are, dropping none.
    SELECT holds INTO o_remaining FROM {{S}}.shared_holders
     WHERE name = p_name AND owner = p_owner AND (p_token = 0 OR token = p_token)
       AND {{S}}._released(release_id, release_ids, p_id);
    IF FOUND THEN
      o_status := 1;
      RETURN;
    END IF;
  END IF;
  UPDATE {{S}}.shared_holders SET holds = holds - 1, release_id = CASE WHEN p_id = '' THEN release_id END,
         release_ids = {{S}}._noted_release(release_id, release_ids, p_id)
   WHERE name = p_name AND owner = p_owner AND (p_token = 0 OR token = p_token)
  RETURNING holds INTO o_remaining;
  IF NOT FOUND THEN
    o_remaining := 0; -- (RETURNING INTO set it NULL: not held)
    IF p_token <> 0 AND EXISTS (SELECT 1 FROM {{S}}.shared_holders WHERE name = p_name AND owner = p_owner) THEN
      o_status := 3; -- a newer grant of the owner
    END IF;
    RETURN;
  END IF;
  o_status := 1;
  IF o_remaining > 0 THEN
    RETURN;
  END IF;
  DELETE FROM {{S}}.shared_holders WHERE name = p_name AND owner = p_owner;
  used := coalesce((SELECT sum(weight) FROM {{S}}.shared_holders WHERE name = p_name), 0);
  PERFORM {{S}}._shared_wake(p_name, s.lim, used);
END $$;

-- release_shared without p_id: version 14's to 19's signature, for
-- processes of those versions (every call drops a hold).
CREATE OR REPLACE FUNCTION {{S}}.release_shared(p_name text, p_owner text, p_token bigint, p_kind integer,
  OUT o_status integer, OUT o_remaining integer)
LANGUAGE sql AS $$ SELECT * FROM {{S}}.release_shared(p_name, p_owner, p_token, p_kind, '') $$;

-- release_shared without p_kind: version 12's and 13's signature, for
-- processes of those versions (the kind is not checked).
CREATE OR REPLACE FUNCTION {{S}}.release_shared(p_name text, p_owner text, p_token bigint,
  OUT o_status integer, OUT o_remaining integer)
LANGUAGE sql AS $$ SELECT * FROM {{S}}.release_shared(p_name, p_owner, p_token, 0, '') $$;

-- release_shared without p_token: version 11's signature, for processes
-- of that version.
CREATE OR REPLACE FUNCTION {{S}}.release_shared(p_name text, p_owner text,
  OUT o_status integer, OUT o_remaining integer)
LANGUAGE sql AS $$ SELECT * FROM {{S}}.release_shared(p_name, p_owner, 0::bigint, 0, '') $$;

-- inspect_shared reads a shared lock without changing or locking
-- anything: its kind and limit (0 when it does not exist), high-water,
-- live waiters, and its live holders in token order.
CREATE OR REPLACE FUNCTION {{S}}.inspect_shared(p_name text,
  OUT o_kind integer, OUT o_limit integer, OUT o_high_water bigint, OUT o_waiters integer,
  OUT o_owners text[], OUT o_weights integer[], OUT o_holds integer[], OUT o_tokens bigint[],
  OUT o_ttls_us bigint[], OUT o_metadata text[])
LANGUAGE plpgsql STABLE AS $$
DECLARE
  now_ timestamptz := clock_timestamp();
BEGIN
  o_kind := 0; o_limit := 0; o_high_water := 0; o_waiters := 0;
  SELECT kind, lim, high_water INTO o_kind, o_limit, o_high_water FROM {{S}}.shared WHERE name = p_name;
  IF NOT FOUND THEN
    o_kind := 0; o_limit := 0; o_high_water := 0;
    RETURN;
  END IF;
  SELECT count(*) INTO o_waiters FROM {{S}}.shared_waiters WHERE name = p_name AND deadline > now_;
  SELECT coalesce(array_agg(owner ORDER BY token), '{}'), coalesce(array_agg(weight ORDER BY token), '{}'),
         coalesce(array_agg(holds ORDER BY token), '{}'), coalesce(array_agg(token ORDER BY token), '{}'),
         coalesce(array_agg({{S}}._us(expires_at - now_) ORDER BY token), '{}'),
         coalesce(array_agg(metadata ORDER BY token), '{}')
    INTO o_owners, o_weights, o_holds, o_tokens, o_ttls_us, o_metadata
    FROM {{S}}.shared_holders WHERE name = p_name AND expires_at > now_;
END $$;

-- set_limit changes a semaphore's limit, making it when it does not exist
-- (engine.Sharer.SetLimit); it returns the previous limit (0 for a new
-- one). Holders above a smaller limit keep their permits. Refusals raise
-- DL001 as acquire_shared's. It holds the name's row of locks FOR KEY
-- SHARE (made free when there is none, waiting for a mutex's insert in
-- progress) before its mutex check, as acquire_shared (version 9; before,
-- it read the row unlocked and stored its kind beside a mutex's grant
-- not yet committed). Since version 18 it is refused, as acquire_shared
-- is, while live waiters queue for the name's mutex (_shared_mutex).
CREATE OR REPLACE FUNCTION {{S}}.set_limit(p_name text, p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.locks;
  s {{S}}.shared;
  now_ timestamptz;
  used bigint;
BEGIN
  LOOP
    SELECT * INTO l FROM {{S}}.locks WHERE name = p_name FOR KEY SHARE;
    EXIT WHEN FOUND;
    INSERT INTO {{S}}.locks (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
  END LOOP;
  now_ := clock_timestamp();
  PERFORM {{S}}._shared_mutex(l, now_);
  SELECT * INTO s FROM {{S}}.shared WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO {{S}}.shared (name, kind, lim, used_at) VALUES (p_name, 1, p_limit, now_)
    ON CONFLICT (name) DO NOTHING;
    IF FOUND THEN
      RETURN 0;
    END IF;
    SELECT * INTO s FROM {{S}}.shared WHERE name = p_name FOR UPDATE;
  END IF;
  now_ := clock_timestamp();
  IF s.kind <> 1 THEN
    RAISE EXCEPTION 'DISTLOCK kind %', s.kind USING ERRCODE = 'DL001';
  END IF;
  used := {{S}}._shared_purge(p_name, now_);
  UPDATE {{S}}.shared SET lim = p_limit, used_at = now_ WHERE name = p_name;
  PERFORM {{S}}._shared_wake(p_name, p_limit, used);
  RETURN s.lim;
END $$;

-- leave_shared takes waiter p_waiter out of name's queue, and wakes the
-- (new) head if it fits. It reports whether the waiter was queued.
CREATE OR REPLACE FUNCTION {{S}}.leave_shared(p_name text, p_waiter text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  s {{S}}.shared;
  used bigint;
  was boolean;
BEGIN
  SELECT * INTO s FROM {{S}}.shared WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  used := {{S}}._shared_purge(p_name, clock_timestamp());
  DELETE FROM {{S}}.shared_waiters WHERE name = p_name AND waiter = p_waiter;
  was := FOUND;
  PERFORM {{S}}._shared_wake(p_name, s.lim, used);
  RETURN was;
END $$;

-- raise_shared_fence raises name's high-water to at least p_token and
-- makes it p_owner's holder token, while p_owner holds permits
-- (engine.SharedFenceRaiser), refused as raise_fence refuses.
CREATE OR REPLACE FUNCTION {{S}}.raise_shared_fence(p_name text, p_owner text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  now_ timestamptz;
  cur bigint;
BEGIN
  PERFORM 1 FROM {{S}}.shared WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  now_ := clock_timestamp();
  PERFORM {{S}}._shared_purge(p_name, now_);
  SELECT token INTO cur FROM {{S}}.shared_holders WHERE name = p_name AND owner = p_owner;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM {{S}}._check_raise(cur, p_token, now_);
  UPDATE {{S}}.shared_holders SET token = p_token WHERE name = p_name AND owner = p_owner;
  UPDATE {{S}}.shared SET high_water = greatest(high_water, p_token), used_at = now_ WHERE name = p_name;
  RETURN true;
END $$;

-- extend_shared renews shared locks' holders and their waiters'
-- heartbeats (p_waiter[i]), all in one call; Extend sends it in the same
-- statement as extend. Statuses: 1 extended, 2 missing, 3 taken over (a
-- force-release freed the holder: _taken); wake tells a waiter that it
-- heads the queue and fits. p_tokens[i] (version 12) as extend's: a
-- holder p_owners[i] under another token (a newer grant of the owner) is
-- not renewed but answered 3 with its token.
CREATE OR REPLACE FUNCTION {{S}}.extend_shared(p_names text[], p_owners text[], p_ttls_us bigint[], p_waiter boolean[],
  p_tokens bigint[])
RETURNS TABLE (o_i integer, o_status integer, o_token bigint, o_wake boolean)
LANGUAGE plpgsql AS $$
DECLARE
  now_ timestamptz;
  r record;
  h {{S}}.shared_waiters;
  lim integer;
  used bigint;
BEGIN
  -- Every row of the batch is locked first, in one order, so that two
  -- batches never wait for each other in a cycle.
  PERFORM 1 FROM {{S}}.shared WHERE name = ANY (p_names) ORDER BY name FOR UPDATE;
  now_ := clock_timestamp();
  DELETE FROM {{S}}.shared_holders WHERE name = ANY (p_names) AND expires_at <= now_;
  DELETE FROM {{S}}.shared_waiters WHERE name = ANY (p_names) AND deadline <= now_;
  RETURN QUERY
    WITH req AS (
      SELECT u.i::integer AS i, u.n, u.o, u.t, coalesce(u.k, 0) AS tok
        FROM unnest(p_names, p_owners, p_ttls_us, p_waiter, p_tokens) WITH ORDINALITY AS u(n, o, t, w, k, i)
       WHERE NOT u.w
    ), upd AS (
      UPDATE {{S}}.shared_holders k SET expires_at = {{S}}._hold_expiry(k.holds, k.expires_at, now_ + req.t * interval '1 microsecond')
        FROM req
       WHERE k.name = req.n AND k.owner = req.o AND (req.tok = 0 OR k.token = req.tok)
      RETURNING k.name, k.owner, k.token
    )
    SELECT req.i,
           CASE WHEN upd.name IS NOT NULL THEN 1
                WHEN hs.owner IS NOT NULL THEN 3 -- a newer grant of the owner
                WHEN {{S}}._taken(req.n, req.o, now_) THEN 3
                ELSE 2 END,
           coalesce(upd.token, hs.token, 0::bigint), false
      FROM req
      LEFT JOIN upd ON upd.name = req.n AND upd.owner = req.o AND (req.tok = 0 OR upd.token = req.tok)
      LEFT JOIN {{S}}.shared_holders hs ON hs.name = req.n AND hs.owner = req.o;
  FOR r IN
    SELECT u.i::integer AS i, u.n, u.o, u.t
      FROM unnest(p_names, p_owners, p_ttls_us, p_waiter) WITH ORDINALITY AS u(n, o, t, w, i)
     WHERE u.w
  LOOP
    o_i := r.i; o_token := 0; o_wake := false;
    UPDATE {{S}}.shared_waiters SET deadline = now_ + r.t * interval '1 microsecond'
     WHERE name = r.n AND waiter = r.o;
    IF NOT FOUND THEN
      o_status := 2;
      RETURN NEXT;
      CONTINUE;
    END IF;
    o_status := 1;
    SELECT * INTO h FROM {{S}}.shared_waiters WHERE name = r.n ORDER BY ticket LIMIT 1;
    IF h.waiter = r.o THEN
      SELECT k.lim INTO lim FROM {{S}}.shared k WHERE k.name = r.n;
      used := coalesce((SELECT sum(weight) FROM {{S}}.shared_holders WHERE name = r.n), 0);
      o_wake := {{S}}._shared_due(h.weight, lim, used);
    END IF;
    RETURN NEXT;
  END LOOP;
END $$;

-- extend_shared without p_tokens: version 11's signature, for processes
-- of that version (and extend_shared_taken).
CREATE OR REPLACE FUNCTION {{S}}.extend_shared(p_names text[], p_owners text[], p_ttls_us bigint[], p_waiter boolean[])
RETURNS TABLE (o_i integer, o_status integer, o_token bigint, o_wake boolean)
LANGUAGE sql AS $$ SELECT * FROM {{S}}.extend_shared(p_names, p_owners, p_ttls_us, p_waiter, '{}'::bigint[]) $$;

-- Tokens count up from the database clock in microseconds at the first
-- Migrate (and never below it at a later one): a schema dropped and made
-- again still mints tokens above the old ones (unless the clock was set
-- back), so resources that recorded them keep working.
SELECT setval({{TOKENS}}, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)
 WHERE (SELECT last_value FROM {{S}}.tokens) < (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;

-- The administration of shared locks (force-release; list reads the tables
-- in statements.go).

-- force_release_shared frees every holder of the shared lock p_name,
-- whoever it is, or only the holder p_owner (p_owner not ''), marks them
-- taken over (_mark_taken), and wakes the head of the queue if it fits;
-- it returns the number of holders freed. (Version 3's
-- force_release_shared(text) is dropped first, as force_release's.)
DROP FUNCTION IF EXISTS {{S}}.force_release_shared(text);
CREATE OR REPLACE FUNCTION {{S}}.force_release_shared(p_name text, p_owner text DEFAULT '') RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  s {{S}}.shared;
  now_ timestamptz;
  n integer := 0;
  h record;
  used bigint;
BEGIN
  SELECT * INTO s FROM {{S}}.shared WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  now_ := clock_timestamp();
  PERFORM {{S}}._shared_purge(p_name, now_);
  FOR h IN
    DELETE FROM {{S}}.shared_holders WHERE name = p_name AND (p_owner = '' OR owner = p_owner)
    RETURNING owner, expires_at
  LOOP
    PERFORM {{S}}._mark_taken(p_name, h.owner, h.expires_at, now_);
    n := n + 1;
  END LOOP;
  IF n > 0 THEN
    used := coalesce((SELECT sum(weight) FROM {{S}}.shared_holders WHERE name = p_name), 0);
    PERFORM {{S}}._shared_wake(p_name, s.lim, used);
  END IF;
  RETURN n;
END $$;

-- Version 3 kept the shared locks' marks in shared_taken and renewed them
-- through extend_shared_taken: its marks move to taken, and
-- extend_shared_taken stays, as extend_shared, for processes of that
-- version still running (to be dropped by a later version).
-- (Made empty first where it never was, so that each statement holds.)
CREATE TABLE IF NOT EXISTS {{S}}.shared_taken (
  name    text COLLATE "C" NOT NULL,
  owner   text NOT NULL,
  until   timestamptz NOT NULL,
  PRIMARY KEY (name, owner)
);
INSERT INTO {{S}}.taken (name, owner, until) SELECT name, owner, until FROM {{S}}.shared_taken
ON CONFLICT (name, owner) DO UPDATE SET until = greatest({{S}}.taken.until, excluded.until);
DROP TABLE {{S}}.shared_taken;
CREATE OR REPLACE FUNCTION {{S}}.extend_shared_taken(p_names text[], p_owners text[], p_ttls_us bigint[], p_waiter boolean[])
RETURNS TABLE (o_i integer, o_status integer, o_token bigint, o_wake boolean)
LANGUAGE sql AS $$ SELECT * FROM {{S}}.extend_shared(p_names, p_owners, p_ttls_us, p_waiter) $$;

-- Sets of mutexes (engine.MultiAcquirer, engine.MultiReleaser), version 5.

-- acquire_multi grants the mutex p_names[i] to p_owners[i] for every i, or
-- none, in one call (engine.MultiAcquirer.AcquireMulti). It locks every
-- name's row of locks in name order, as extend's batches (a name without
-- a row gets a free one, deleted again unless granted), so that two sets
-- never wait for each other in a cycle; then no shared lock's holder may
-- hold any of the names (_mutex_check, refused with its DL001 error, the
-- DETAIL being the request's index, 1-based, having changed nothing,
-- whatever holds the other names), and, in the order of the requests,
-- each name must be free and nobody may queue for it (a live waiter, fair
-- or not: a set never goes ahead of a queue).
-- A name held by the request's own owner from the request's own attempt
-- is a resent copy of this call whose answer was lost (the owners are
-- one-off): it keeps its token and its lease restarts from now, as a
-- resent attempt's re-entry does (held by the owner from another attempt,
-- it is refused as held). Only
-- once every name passed is any granted, each token drawn then, while the
-- call holds every row: greatest(a value of the tokens sequence, the
-- name's high-waters + 1), as acquire's. A refusal answers the first
-- request that blocks (o_blocked, 0-based) with its holder and time left,
-- or o_reserved for a free name kept for its queue, having deleted the
-- rows it made and freed the names a resent copy found its own.
CREATE OR REPLACE FUNCTION {{S}}.acquire_multi(
  p_names text[], p_owners text[], p_ttls_us bigint[], p_metadata text[], p_attempts text[],
  OUT o_acquired boolean, OUT o_tokens bigint[], OUT o_blocked integer, OUT o_holder text,
  OUT o_holder_ttl_us bigint, OUT o_reserved boolean)
LANGUAGE plpgsql AS $$
DECLARE
  n integer := coalesce(cardinality(p_names), 0);
  ls {{S}}.locks[];
  made text[] := '{}';
  hws bigint[];
  l {{S}}.locks;
  now_ timestamptz;
  i integer;
  cur integer;
  rv text;
  ru timestamptz;
  tok bigint;
  mine boolean[];
BEGIN
  o_acquired := false; o_tokens := '{}'; o_blocked := -1; o_holder := ''; o_holder_ttl_us := 0;
  o_reserved := false;
  FOR i IN SELECT u.i FROM unnest(p_names) WITH ORDINALITY AS u(nm, i) ORDER BY u.nm COLLATE "C" LOOP
    LOOP
      l := {{S}}._lock(p_names[i]);
      EXIT WHEN l.name IS NOT NULL;
      INSERT INTO {{S}}.locks (name) VALUES (p_names[i]) ON CONFLICT (name) DO NOTHING;
      IF FOUND THEN
        made := made || p_names[i];
      END IF;
    END LOOP;
    ls[i] := l;
  END LOOP;
  -- The names' shared rows, FOR SHARE in name order as every batch locks
  -- them (_mutex_check below locks each again, in the request's order:
  -- a lock already held), so that a renewal of shared holders (their rows
  -- FOR UPDATE in name order) and a set never wait for each other in a
  -- cycle.
  PERFORM 1 FROM {{S}}.shared WHERE name = ANY (p_names) ORDER BY name FOR SHARE;
  now_ := clock_timestamp();
  hws := array_fill(0::bigint, ARRAY[n]);
  mine := array_fill(false, ARRAY[n]);
  FOR i IN 1 .. n LOOP
    l := ls[i];
    mine[i] := {{S}}._live(l, now_) AND l.owner = p_owners[i] AND l.attempt IS NOT DISTINCT FROM p_attempts[i];
  END LOOP;
  -- Every name's kind first: a name held as a shared lock refuses the set
  -- ahead of any contention on another name (a kind error is never
  -- contention). Then name by name in the request's order, as every
  -- engine judges a set: the first name that blocks it (a holder, a
  -- queue) gives the answer.
  BEGIN
    FOR i IN 1 .. n LOOP
      cur := i;
      hws[i] := {{S}}._mutex_check(p_names[i], now_);
    END LOOP;
  EXCEPTION WHEN SQLSTATE 'DL001' THEN
    RAISE EXCEPTION USING ERRCODE = 'DL001', MESSAGE = SQLERRM, DETAIL = cur::text;
  END;
  FOR i IN 1 .. n LOOP
    l := ls[i];
    IF {{S}}._live(l, now_) THEN
      CONTINUE WHEN mine[i]; -- a resent copy's grant
      o_blocked := i - 1;
      o_holder := l.owner;
      o_holder_ttl_us := {{S}}._us(l.expires_at - now_);
      EXIT;
    END IF;
    IF EXISTS (SELECT 1 FROM {{S}}.waiters WHERE name = p_names[i] AND deadline > now_) THEN
      -- Free, but kept for its queue: a set does not go ahead of it.
      o_blocked := i - 1;
      o_reserved := true;
      o_holder_ttl_us := {{RESERVE_US}};
      IF l.reserved_for IS NOT NULL AND l.reserved_until > now_ THEN
        o_holder_ttl_us := greatest({{S}}._us(l.reserved_until - now_), 1000);
      END IF;
      EXIT;
    END IF;
  END LOOP;
  IF o_blocked >= 0 THEN
    DELETE FROM {{S}}.locks WHERE name = ANY (made);
    FOR i IN 1 .. n LOOP
      IF mine[i] THEN
        PERFORM {{S}}._free(ls[i], now_, false);
      END IF;
    END LOOP;
    RETURN;
  END IF;
  o_tokens := array_fill(0::bigint, ARRAY[n]);
  FOR i IN 1 .. n LOOP
    l := ls[i];
    IF mine[i] THEN -- a resent copy's: the token stays
      UPDATE {{S}}.locks SET expires_at = now_ + p_ttls_us[i] * interval '1 microsecond' WHERE name = p_names[i];
      o_tokens[i] := l.token;
      CONTINUE;
    END IF;
    IF EXISTS (SELECT 1 FROM {{S}}.waiters WHERE name = p_names[i]) THEN
      PERFORM {{S}}._settle(p_names[i], now_); -- waiters whose heartbeat stopped
    END IF;
    tok := greatest(nextval({{TOKENS}}), l.high_water + 1, hws[i] + 1);
    UPDATE {{S}}.locks
       SET owner = p_owners[i], holds = 1, token = tok, metadata = p_metadata[i], attempt = p_attempts[i],
           release_id = NULL, release_ids = NULL, expires_at = now_ + p_ttls_us[i] * interval '1 microsecond',
           high_water = greatest(high_water, tok), marked = false
     WHERE name = p_names[i];
    o_tokens[i] := tok;
  END LOOP;
  o_acquired := true;
END $$;

-- release_multi is release of p_names[i] by p_owners[i] with the grant's
-- token p_tokens[i] (version 19; 0: the owner's hold, whatever its token)
-- for every i, in one call (engine.MultiReleaser.ReleaseMulti), taking the
-- names in name order as acquire_multi does; the answers are numbered by
-- the request. A token other than the owner's hold's (a newer grant of
-- the same owner, after a force-release) is answered 3 and drops nothing,
-- as release answers it. Arrays of different lengths, or a NULL token, are
-- refused (22023) before anything is released.
CREATE OR REPLACE FUNCTION {{S}}.release_multi(p_names text[], p_owners text[], p_tokens bigint[])
RETURNS TABLE (o_i integer, o_status integer, o_remaining integer)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  IF cardinality(p_owners) IS DISTINCT FROM cardinality(p_names)
     OR cardinality(p_tokens) IS DISTINCT FROM cardinality(p_names)
     OR array_position(p_tokens, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'release_multi: % names, % owners, % tokens',
      cardinality(p_names), cardinality(p_owners), cardinality(p_tokens)
      USING ERRCODE = '22023';
  END IF;
  FOR r IN SELECT u.i::integer AS i, u.nm, u.o, u.t
             FROM unnest(p_names, p_owners, p_tokens) WITH ORDINALITY AS u(nm, o, t, i) ORDER BY u.nm COLLATE "C"
  LOOP
    o_i := r.i;
    SELECT x.o_status, x.o_remaining INTO o_status, o_remaining FROM {{S}}.release(r.nm, r.o, '', r.t) x;
    RETURN NEXT;
  END LOOP;
END $$;

-- release_multi without p_tokens: version 5's to 18's signature, for
-- processes of those versions (every token 0: the owner's hold, whatever
-- its token).
CREATE OR REPLACE FUNCTION {{S}}.release_multi(p_names text[], p_owners text[])
RETURNS TABLE (o_i integer, o_status integer, o_remaining integer)
LANGUAGE sql AS $$
  SELECT * FROM {{S}}.release_multi(p_names, p_owners,
    array_fill(0::bigint, ARRAY[coalesce(cardinality(p_names), 0)]))
$$;

-- Countdown latches (engine.Latcher), version 6: a row per counting
-- latch (a namespace beside the locks'), deleted when its count reaches
-- zero; ids are the last 16 CountDown calls applied, so a resent copy of
-- one counts nothing. Reaching zero notifies the name's channel key with
-- 'latch' (not addressed: every subscriber of the name wakes).
CREATE TABLE IF NOT EXISTS {{S}}.latches (
  name  text COLLATE "C" PRIMARY KEY,
  count bigint NOT NULL CHECK (count > 0),
  ids   text[] NOT NULL DEFAULT '{}'
);

-- latch_set sets name's count when it has none, and reports whether it did.
CREATE OR REPLACE FUNCTION {{S}}.latch_set(p_name text, p_count bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {{S}}.latches (name, count) VALUES (p_name, p_count) ON CONFLICT (name) DO NOTHING;
  RETURN FOUND;
END $$;

-- latch_count_down takes one off name's count, unless it has none or
-- p_id is among the last calls applied, and returns the count after it;
-- at zero it deletes the row and notifies the name.
CREATE OR REPLACE FUNCTION {{S}}.latch_count_down(p_name text, p_id text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  l {{S}}.latches;
BEGIN
  SELECT * INTO l FROM {{S}}.latches WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  IF p_id <> '' AND p_id = ANY (l.ids) THEN
    RETURN l.count;
  END IF;
  IF l.count <= 1 THEN
    DELETE FROM {{S}}.latches WHERE name = p_name;
    PERFORM {{S}}._notify(p_name, 'latch');
    RETURN 0;
  END IF;
  UPDATE {{S}}.latches SET count = l.count - 1,
    ids = (CASE WHEN p_id = '' THEN l.ids ELSE (l.ids || p_id)[greatest(1, cardinality(l.ids) - 14):] END)
   WHERE name = p_name;
  RETURN l.count - 1;
END $$;

INSERT INTO {{S}}.version (version) SELECT 17 WHERE NOT EXISTS (SELECT 1 FROM {{S}}.version);
-- 2: shared locks; 3: tokens fixed once the grant holds the name's row,
-- the mutex refused while shared holders hold the name; 4: a semaphore's
-- stored limit governs (a request that declares another is not refused),
-- an owner's holds never have their expiry moved earlier while it has
-- more than one (_hold_expiry), and a force-release marks the holders it
-- frees taken over, of either kind (taken), and frees one holder by owner;
-- 5: sets of mutexes granted and released in one call (acquire_multi,
-- release_multi); 6: countdown latches (latches, latch_set,
-- latch_count_down); 7: a waiter's wake-up on its engine's own channel
-- (waiters.chan, acquire's p_chan), so no other engine's listener
-- receives it, and _lock, _head and _enqueue in plpgsql (plans kept by
-- the session); 8: a free lock's reserved head that asks after its
-- reservation's end, before any other call on the name, is granted
-- (_settle_for) instead of being sent to the back of the queue; 9: a
-- mutex's grant locks the shared lock's row FOR SHARE while it checks its
-- holders (_mutex_check: a renewal or a raise of a shared holder in
-- progress is waited for), set_limit holds the row of locks FOR KEY SHARE
-- while it checks for a mutex, and a deleted row of locks leaves its
-- high-water with the shared row (_forget); 10: a queued head that asks
-- for more permits than the limit (shrunk by set_limit) is woken, and its
-- attempt refused, instead of waiting for good (_shared_due); 11: a
-- Proclaim (set_metadata) of a holder a force-release freed is answered
-- taken over (3), not missing (2); 12: renewals and releases name the
-- grant's token (extend's and extend_shared's p_tokens, release's and
-- release_shared's p_token), and one that names a token other than the
-- owner's hold's changes nothing (version 11's signatures stay, calling
-- them with 0: any token); 13: a set (acquire_multi) checks every name's
-- kind before any name's holder or queue, so a name held as a shared lock
-- refuses it ahead of contention on another name; 14: pgfence's
-- HighestSeen (fence_check mode 2) refuses a token below the name's newest
-- grant of any kind (the rows of locks and shared, and the high-water a
-- deleted row left with the name's mark, fence_marks.granted, which
-- _forget and sweep carry), locking only the mark (not the row of
-- locks), and a release of a shared lock asked with
-- another kind than the lock's while the owner holds it is refused
-- (release_shared's p_kind; version 13's signature stays, unchecked);
-- 15: fence_check's HighestSeen (mode 2) raises DL002 in a transaction
-- that is not READ COMMITTED, whose snapshot could hide a newer grant,
-- before it writes anything; 16: a Proclaim names the grant's token
-- (set_metadata's p_token), and one that names a token other than the
-- owner's hold's changes nothing, so a deposed leader of the same owner
-- cannot overwrite the new leader's value (version 15's signature stays,
-- calling it with 0: any token); 17: a live queued waiter binds the name
-- to its kind as a holder does (acquire_shared refuses while one queues
-- for the mutex, _mutex_check while one queues for the shared lock); 18:
-- set_limit is refused while a live waiter queues for the name's mutex, as
-- acquire_shared is (_shared_mutex, one rule for both); 19: a set's
-- release names each grant's token (release_multi's p_tokens), and one
-- that names a token other than the owner's hold's drops nothing (version
-- 18's signature stays, calling it with 0: any token), and pgfence's
-- HighestSeen raises DL003, recording nothing, for a token above the
-- name's newest grant of any kind that the schema remembers (a token no
-- grant of the name has had, or any token of a forgotten name); the
-- upgrade to 19 resets the marks such a token left (below); 20: a shared
-- hold's release carries the call's id (release_shared's p_id,
-- shared_holders.release_id), and a copy with the same id drops no second
-- hold (engine.OnceReleaser), as a mutex's release does (version
-- 19's signature stays, calling it with no id); 21: a hold keeps the ids
-- of its last 8 count-downs (locks.release_ids, shared_holders.
-- release_ids; _released, _noted_release), not only the last one's, so a
-- late copy of a release drops nothing after other releases of the
-- owner's holds; function bodies only, every signature as in version 20.

-- A mark whose accepted token is above the name's newest grant of any kind
-- holds a token no grant of the name had (recorded before version 19):
-- it would refuse every later real grant as stale. Its token is reset to
-- 0 (holder ''): the check's floor is then the name's newest grant, which
-- refuses every older token as before. Run once, on the upgrade to 19.
UPDATE {{S}}.fence_marks m SET token = 0, holder = ''
 WHERE (SELECT max(v.version) FROM {{S}}.version v) < 19
   AND m.token > greatest(m.granted,
         coalesce((SELECT k.high_water FROM {{S}}.locks k WHERE k.name = m.name), 0),
         coalesce((SELECT s.high_water FROM {{S}}.shared s WHERE s.name = m.name), 0));

UPDATE {{S}}.version SET version = 21 WHERE version < 21;
