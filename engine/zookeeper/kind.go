package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// A shared lock's kind and limit are stored in the persistent child
// kindPrefix+PathEscape(name) of the root, beside the name's container:
// they outlive the holders (the container goes once empty), so that the
// stored limit governs and the other shared kind is refused after every
// holder left. A grant checks the record's version in its transaction:
// a SetLimit between the read and the grant makes the grant run again.
const kindPrefix = "k-"

// kindRecord is a shared lock's stored kind and limit.
type kindRecord struct {
	Kind    engine.Kind `json:"s"`
	Limit   int         `json:"l"`
	version int32
	path    string
}

// kindPath returns the path of name's kind record.
func (e *Engine) kindPath(name string) string {
	return e.root + "/" + kindPrefix + url.PathEscape(name)
}

// readKind reads name's kind record (ok false: none).
func (e *Engine) readKind(ctx context.Context, name string) (kindRecord, bool, error) {
	rec := kindRecord{path: e.kindPath(name)}
	b, st, err := e.get(ctx, rec.path)
	if errors.Is(err, zk.ErrNoNode) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, backendErr("read kind of "+name, err)
	}
	rec.version = st.Version
	return rec, true, nil
}

// createKind stores name's kind record as rec in one transaction with a
// check of the name node at the version the line l was read at: a
// reading that missed a mutex's grant (one made meanwhile, or not yet
// applied by the member the session reads from) stores nothing, as a
// refusal changes nothing. made is false when the record or the name
// node changed meanwhile (read again). l must show the name node.
func (e *Engine) createKind(ctx context.Context, l *line, name string, rec kindRecord) (made bool, err error) {
	b, _ := json.Marshal(rec)
	_, err = e.multi(ctx, &zk.CheckVersionRequest{Path: l.path, Version: l.parent.Version},
		&zk.CreateRequest{Path: e.kindPath(name), Data: b, Acl: zk.WorldACL(zk.PermAll)})
	if changedMeanwhile(err) {
		return false, nil
	}
	return err == nil, err
}

// changedMeanwhile reports whether err is a transaction's failed check: a
// version, or a node found made or gone, that changed since it was read.
func changedMeanwhile(err error) bool {
	return errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNodeExists)
}

// createRecord creates the persistent root child path with data (the root
// too, when missing); false when it exists.
func (e *Engine) createRecord(ctx context.Context, path string, data []byte) (bool, error) {
	create := func() (string, error) { return e.conn.Create(path, data, 0, zk.WorldACL(zk.PermAll)) }
	_, err := do(ctx, e, "create", create)
	if errors.Is(err, zk.ErrNoNode) {
		if err = e.ensure(ctx, e.root, plainNode); err == nil {
			_, err = do(ctx, e, "create", create)
		}
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return false, nil
	}
	return err == nil, err
}

// kindOf returns the kind record of r's shared lock and the operation its
// grant's transaction must carry: a check of the record at the version
// read, or, when the name has none, the record's creation with r's kind
// and declared limit. The record is stored only by the transaction that
// grants (or by SetLimit): stored first, in a transaction of its own, a
// grant of another kind (a mutex) committed between the two made the
// request a refusal that had stored its kind, and the name then refused
// the other shared kind once the mutex was gone (TestStrangerKindsRace,
// mutex and reader). ok is false when the round must run again (the name
// node made first).
func (e *Engine) kindOf(ctx context.Context, r engine.AcquireRequest, l *line) (rec kindRecord, op any, ok bool, err error) {
	rec, ok, err = e.readKind(ctx, r.Name)
	if err != nil {
		return rec, nil, false, err
	}
	if ok {
		return rec, &zk.CheckVersionRequest{Path: rec.path, Version: rec.version}, true, nil
	}
	if err := engine.CheckShared(r, r.Kind, r.Limit); err != nil {
		return rec, nil, false, err // a semaphore is not made with a bad limit
	}
	if l.parent == nil { // no name node yet: made first, and read again
		return rec, nil, false, e.ensure(ctx, l.path, containerNode)
	}
	rec.Kind, rec.Limit = r.Kind, r.Limit
	b, _ := json.Marshal(rec)
	// A record made meanwhile (a SetLimit, another grant) fails the
	// creation: the round runs again on it.
	return rec, &zk.CreateRequest{Path: rec.path, Data: b, Acl: zk.WorldACL(zk.PermAll)}, true, nil
}

// Acquire implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.AcquireByKind) to acquireMutex or acquireShared.
func (e *Engine) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	return engine.AcquireByKind(ctx, r, e.acquireMutex, e.acquireShared)
}

// Release implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.ReleaseByKind) to releaseMutex or releaseShared.
func (e *Engine) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return engine.ReleaseByKind(ctx, r, e.releaseMutex, e.releaseShared)
}

// ReleaseOnce implements engine.OnceReleaser: a shared lock's holder is a
// child as a mutex's is, and is released alike (releaseOnceMutex).
func (e *Engine) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	return engine.ReleaseOnceByKind(ctx, r, id, e.releaseOnceMutex, e.releaseOnceMutex)
}

// Inspect implements engine.Engine: it reads the ensemble's clock (a write
// of the root node's data: the only way to learn it), the line (a mutex's
// holder and a shared lock's are children of the same line) and the kind
// record, changing no lock, and describes the name as engine.Describe
// picks.
func (e *Engine) Inspect(ctx context.Context, name string) (engine.Info, error) {
	l, now, err := e.inspectLine(ctx, name)
	if err != nil {
		return engine.Info{}, err
	}
	shared, err := e.sharedInfo(ctx, name, &l, now)
	if err != nil {
		return engine.Info{}, err
	}
	return engine.Describe(l.info(name, now), shared), nil
}
